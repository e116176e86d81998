package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/storage"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// defaultQuota is etcd's default --quota-backend-bytes, which Maintenance.Status reports.
const defaultQuota = 2 << 30

// Version is what Maintenance.Status reports.
const Version = "3.7.1-clusterd"

// storageVersion is the storageVersion Maintenance.Status reports: etcd's storage version (its
// major.minor.0, as etcd writes it) of the API level Version speaks, so that a client comparing
// it with Version, as etcd's downgrade checks do, finds them agreeing. clusterd's bbolt file is a
// format of its own (pkg/storage), which this value does not describe. Keep it with Version.
const storageVersion = "3.7.0"

// keyspaceRevision is the header revision Maintenance.Status reports: the revision of etcd's
// keyspace, which clusterd keeps empty and never changes (its KV service serves only the read
// of "health"). An etcd store begins at revision 1, and a membership change does not move it on
// etcd either, so an etcd member with no keys written answers the same.
const keyspaceRevision = 1

// Config configures the API.
type Config struct {
	Node           *raftnode.Node
	Coordinator    *reconfig.Coordinator
	ClusterID      membership.ID
	Store          *storage.Store
	RequestTimeout time.Duration
	// Conditions are this member's own findings that Status reports in its errors after etcd's
	// (no leader): a voter's claim that --force-new-cluster removed this member. Nil: none.
	Conditions func() []string
}

// Server implements the services: etcd's Cluster, Maintenance and KV, clusterd's History and
// DryRun (clusterdpb) beside them.
type Server struct {
	pb.UnimplementedClusterServer
	pb.UnimplementedMaintenanceServer
	pb.UnimplementedKVServer
	cpb.UnimplementedHistoryServer
	cpb.UnimplementedDryRunServer
	cfg Config
}

// New returns the API server.
func New(cfg Config) *Server { return &Server{cfg: cfg} }

// Register adds the services to a client gRPC server.
func (s *Server) Register(g *grpc.Server) {
	pb.RegisterClusterServer(g, s)
	pb.RegisterMaintenanceServer(g, s)
	pb.RegisterKVServer(g, s)
	cpb.RegisterHistoryServer(g, s)
	cpb.RegisterDryRunServer(g, s)
}

// withTimeout bounds a request that waits for the cluster: by the client's deadline, or by
// RequestTimeout without one. This member stopping (removed, or shutting down) ends the waits
// that are its own at once (a read, a proposal, waiting for a leader: raftnode selects on it),
// but not a change forwarded to the leader: that answer is the change's outcome, and it comes
// from a member that still runs. A removed leader that handed off and forwarded its own
// removal learns of it as the new leader answers; cancelling the call then would turn a done
// removal into "request timed out".
func (s *Server) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.cfg.RequestTimeout)
}

// refuseStopped refuses a request on a member that is stopping before it waits for anything:
// what it would answer, the cluster may have moved past, and it may never be answered.
func (s *Server) refuseStopped() error {
	if s.cfg.Node.Stopped() {
		return rpcerr.Status(raftnode.ErrStopped)
	}
	return nil
}

// read is the applied membership, as of a linearizable read (ReadIndex) when linearizable.
func (s *Server) read(ctx context.Context, linearizable bool) (*membership.Cluster, error) {
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	if !linearizable {
		return s.cfg.Node.Cluster(), nil
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	c, err := s.cfg.Node.ReadIndex(ctx)
	if err != nil {
		return nil, rpcerr.Status(err)
	}
	return c, nil
}

func (s *Server) header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: uint64(s.cfg.ClusterID), MemberId: uint64(s.cfg.Node.ID()), RaftTerm: s.cfg.Node.Term()}
}

func incoming(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// toProtoMembers converts a membership for the wire.
func toProtoMembers(c *membership.Cluster) []*pb.Member {
	var out []*pb.Member
	for _, m := range c.List() {
		out = append(out, toProto(m))
	}
	return out
}

// setMembersHeader sends what etcd's Member cannot carry (every member's name and started flag,
// and the leader) as header metadata, for every answer that lists the members.
func (s *Server) setMembersHeader(ctx context.Context, c *membership.Cluster) {
	lead := ""
	if l := s.cfg.Node.Leader(); l != 0 {
		lead = l.String()
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(wire.Members, wire.MembersValue(c), wire.Leader, lead))
}

func toProto(m *membership.Member) *pb.Member {
	p := &pb.Member{ID: uint64(m.ID), PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
	if m.Started {
		p.Name = m.Name
	}
	return p
}

// change makes ch, unless this member is stopping, and answers the change applied, the members
// after it set in the header (setMembersHeader), or the refusal as a status.
func (s *Server) change(ctx context.Context, ch membership.Change) (*reconfig.Reply, error) {
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	reply, err := s.do(ctx, reconfig.Request{Change: ch})
	if err != nil {
		return nil, rpcerr.Status(err)
	}
	s.setMembersHeader(ctx, reply.Cluster)
	return reply, nil
}

// do hands req to the coordinator, marked with who asked, within the request's time.
func (s *Server) do(ctx context.Context, req reconfig.Request) (*reconfig.Reply, error) {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	req.Change.By = origin(ctx)
	return s.cfg.Coordinator.Do(ctx, req)
}

// checkPeerURLs refuses peer URLs that are malformed or that members cannot dial.
func checkPeerURLs(urls []string) error {
	if err := membership.ValidatePeerURLs(urls); err != nil {
		return err
	}
	for _, u := range urls {
		if _, err := transport.Target(u); err != nil {
			return membership.ErrInvalidPeerURLs
		}
	}
	return nil
}

// MemberAdd adds a voter or a learner; it returns once the change is applied.
func (s *Server) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if err := checkPeerURLs(r.GetPeerURLs()); err != nil {
		return nil, rpcerr.Status(err)
	}
	ch := membership.Change{Kind: membership.KindAdd, Member: membership.Member{
		Name: incoming(ctx, wire.MemberName), PeerURLs: r.GetPeerURLs(), IsLearner: r.GetIsLearner(),
	}}
	reply, err := s.change(ctx, ch)
	if err != nil {
		return nil, err
	}
	return &pb.MemberAddResponse{Header: s.header(), Member: toProto(&reply.Member), Members: toProtoMembers(reply.Cluster)}, nil
}

// MemberRemove removes a member.
func (s *Server) MemberRemove(ctx context.Context, r *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	reply, err := s.change(ctx, membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(r.GetID())}})
	if err != nil {
		return nil, err
	}
	return &pb.MemberRemoveResponse{Header: s.header(), Members: toProtoMembers(reply.Cluster)}, nil
}

// MemberUpdate changes a member's peer URLs; a learner stays a learner.
func (s *Server) MemberUpdate(ctx context.Context, r *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	if err := checkPeerURLs(r.GetPeerURLs()); err != nil {
		return nil, rpcerr.Status(err)
	}
	reply, err := s.change(ctx, membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: membership.ID(r.GetID()), PeerURLs: r.GetPeerURLs()}})
	if err != nil {
		return nil, err
	}
	return &pb.MemberUpdateResponse{Header: s.header(), Members: toProtoMembers(reply.Cluster)}, nil
}

// MemberPromote makes a learner that has caught up a voter.
func (s *Server) MemberPromote(ctx context.Context, r *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	reply, err := s.change(ctx, membership.Change{Kind: membership.KindPromote, Member: membership.Member{ID: membership.ID(r.GetID())}})
	if err != nil {
		return nil, err
	}
	return &pb.MemberPromoteResponse{Header: s.header(), Members: toProtoMembers(reply.Cluster)}, nil
}

// MemberList lists the members: linearizable unless the request asks for a serializable read,
// which any member answers from what it has applied, even without a leader.
func (s *Server) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	c, err := s.read(ctx, r.GetLinearizable())
	if err != nil {
		return nil, err
	}
	s.setMembersHeader(ctx, c)
	return &pb.MemberListResponse{Header: s.header(), Members: toProtoMembers(c)}, nil
}

// Status reports this member's raft position.
func (s *Server) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	n := s.cfg.Node
	resp := &pb.StatusResponse{
		Header: s.header(), Version: Version, StorageVersion: storageVersion, Leader: uint64(n.Leader()),
		RaftIndex: n.LastIndex(), RaftTerm: n.Term(), RaftAppliedIndex: n.Applied(),
	}
	resp.Header.Revision = keyspaceRevision
	// No downgrade under way, as etcd answers when none is: clusterd has none to offer.
	resp.DowngradeInfo = &pb.DowngradeInfo{}
	if m := n.Cluster().Member(n.ID()); m != nil {
		resp.IsLearner = m.IsLearner
	}
	resp.DbSize, resp.DbSizeInUse = s.cfg.Store.Size()
	// etcd's default quota: clusterd enforces none, its database holding the membership and at
	// most a snapshot's worth of log; etcdctl prints the field (QUOTA), and 0 reads as full.
	resp.DbSizeQuota = defaultQuota
	if n.Leader() == 0 {
		resp.Errors = append(resp.Errors, raftnode.ErrNoLeader.Error())
	}
	if s.cfg.Conditions != nil {
		resp.Errors = append(resp.Errors, s.cfg.Conditions()...)
	}
	return resp, nil
}

// snapshotChunk is the size of one message of a snapshot stream.
const snapshotChunk = 32 << 10

// Snapshot streams a consistent copy of this member's database followed by its SHA-256, the
// layout etcd uses, so etcdctl snapshot save works too. The copy is small (the membership and
// at most a snapshot's worth of log), so it is taken into memory in one read transaction.
func (s *Server) Snapshot(_ *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	if err := s.refuseStopped(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := s.cfg.Store.WriteTo(&buf); err != nil {
		return rpcerr.Status(err)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	for sent := 0; sent < len(data); sent += snapshotChunk {
		n := min(snapshotChunk, len(data)-sent)
		resp := &pb.SnapshotResponse{Header: s.header(), RemainingBytes: uint64(len(data) - sent - n), Blob: data[sent : sent+n]}
		if sent == 0 {
			resp.Version = Version
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return stream.Send(&pb.SnapshotResponse{Header: s.header(), Blob: sum[:]})
}
