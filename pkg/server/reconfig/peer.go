package reconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// ClusterInfo is a member's answer to a Membership call: what a joining member checks its
// flags against.
type ClusterInfo struct {
	Cluster *membership.Cluster
	Applied uint64
	Leader  membership.ID
	// Removal is the event that removed the member RemovalOn asked about, when the answering
	// member's history holds it.
	Removal *membership.Event
}

// Register adds the Members service (clusterdpb.Members: Change and Membership) to a peer gRPC
// server.
func (c *Coordinator) Register(s *grpc.Server) { pb.RegisterMembersServer(s, c) }

// Membership answers another member's question about the membership this member has applied.
func (c *Coordinator) Membership(_ context.Context, req *pb.MembershipRequest) (*pb.MembershipAnswer, error) {
	n := c.cfg.Node
	// Without the history: a removed leader asks every 10 ms while its successor is elected.
	full := n.Cluster()
	cl := full.WithoutHistory()
	if req.GetWithoutRemoved() {
		cl = cl.WithoutRemoved()
	}
	a := &pb.MembershipAnswer{Cluster: wire.ClusterToProto(cl), Applied: n.Applied(), Leader: uint64(n.Leader())}
	if id := membership.ID(req.GetRemovalOf()); id != 0 && full.IsRemoved(id) {
		if ev, ok := full.History.RemovalOf(id); ok {
			// Whether clusterd forced it, and where: not who asked, which the peer port does
			// not tell (docs/security.md).
			a.Removal = wire.EventToProto(membership.Event{RaftIndex: ev.RaftIndex, Term: ev.Term, Time: ev.Time,
				Change: ev.Change, MemberID: ev.MemberID, By: membership.Origin{Clusterd: ev.By.Clusterd}})
		}
	}
	return a, nil
}

// Change decides a request another member forwarded. Errors leave as the registry's statuses,
// which forward reads back as the same values.
func (c *Coordinator) Change(ctx context.Context, in *pb.ChangeRequest) (*pb.ChangeReply, error) {
	if err := c.cfg.Transport.Vouched(ctx); err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	if c.cfg.Node.Leader() != c.cfg.Node.ID() || c.cfg.Node.Stopped() {
		// Never forward twice, and a stopping leader decides nothing more: the caller
		// re-routes.
		return nil, rpcerr.Status(raftnode.ErrNotLeader)
	}
	ctx, cancel := c.cfg.Node.WithStop(ctx)
	defer cancel()
	reply, err := c.decide(ctx, Request{Change: wire.ChangeFromProto(in.GetChange()), DryRun: in.GetDryRun()})
	if errors.Is(err, raftnode.ErrStopped) {
		// This leader stopped before it proposed anything: the caller tries the next one.
		err = raftnode.ErrNotLeader
	}
	if err == nil {
		return reply.WithoutRemoved().Proto(), nil
	}
	if reply != nil {
		// A dry run's refusal is its verdict, answered with the report it was reached on.
		return wire.VerdictProto(reply, rpcerr.Status(err)), nil
	}
	return nil, rpcerr.Status(err)
}

// fromPeer reads what a call to another member failed with: a registered error by its message,
// as the other member sent it, and otherwise what the call's own failure means for retrying.
func fromPeer(err error) error {
	err = rpcerr.FromStatus(err)
	var known *rpcerr.Error
	if errors.As(err, &known) {
		return err
	}
	st, ok := status.FromError(err)
	switch {
	case !ok:
		return err
	case transport.OlderProtocol(err):
		return fmt.Errorf("%w: the member speaks an older peer protocol; members of different versions do not talk, upgrade every member together", err)
	case st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled:
		return raftnode.ErrTimeout
	case st.Code() == codes.Unavailable && strings.HasPrefix(st.Message(), "connection error:"):
		// The leader could not be reached at all: nothing was sent to it.
		return raftnode.ErrNotLeader
	case st.Code() == codes.Unavailable:
		// The connection broke after the request went out: it may have been applied.
		return raftnode.ErrTimeout
	}
	return err
}

func (c *Coordinator) forward(ctx context.Context, lead membership.ID, req Request) (*Reply, error) {
	m := c.cfg.Node.Cluster().Member(lead)
	if m == nil || len(m.PeerURLs) == 0 {
		return nil, raftnode.ErrNotLeader
	}
	conn, err := c.cfg.Transport.Dial(m.PeerURLs[0])
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// A leader that stops answering after it was last heard (paused, cut off) would keep the
	// request until the client's deadline: the leader's answer is awaited as long as the leader
	// needs to give one (forwardWithin), and then the outcome is unknown (ErrTimeout), as it is
	// for any request sent and not answered.
	ctx, cancel := context.WithTimeout(ctx, c.forwardWithin())
	defer cancel()
	in := &pb.ChangeRequest{Change: wire.ChangeToProto(req.Change), DryRun: req.DryRun}
	reply, err := pb.NewMembersClient(conn).Change(ctx, in)
	if err != nil {
		return nil, fromPeer(err)
	}
	r, refusal := wire.VerdictFromProto(reply)
	if refusal == nil {
		return r, nil
	}
	if err = fromPeer(refusal); !req.DryRun || retryable(err) {
		return nil, err
	}
	return r, err
}

// forwardWithin is how long a member waits for its leader's answer to a forwarded request: the
// leader's judgement (judgeWithin), and three election timeouts for the change to commit and
// apply, which takes a round trip on a live cluster. With the default election timeout that is
// 4 s, inside etcdctl's 5 s.
func (c *Coordinator) forwardWithin() time.Duration {
	return c.judgeWithin() + 3*c.cfg.ElectionTimeout
}

// AwaitVoter waits, an election timeout at most, until member id has applied its own promotion,
// as its answer to a Membership call on the peer port says. Raft's last step of a leadership
// transfer, its invitation to campaign, goes out as soon as the target's log matches the
// leader's, and a member that has not applied its promotion yet drops it as a learner's: the
// transfer would then wait out an election timeout. Asked before the transfer, nothing of raft's
// is held or altered. A member that does not answer is not waited for beyond the bound; raft's
// transfer then decides.
func (c *Coordinator) AwaitVoter(ctx context.Context, id membership.ID) {
	m := c.cfg.Node.Cluster().Member(id)
	if m == nil || m.IsLearner || len(m.PeerURLs) == 0 {
		return
	}
	conn, err := c.cfg.Transport.Dial(m.PeerURLs[0])
	if err != nil {
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ElectionTimeout)
	defer cancel()
	for {
		if info, err := ask(ctx, conn, m.PeerURLs[0], &pb.MembershipRequest{WithoutRemoved: true}); err == nil {
			if self := info.Cluster.Member(id); self != nil && !self.IsLearner {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.cfg.ElectionTimeout / 50):
		}
	}
}

// FetchMembership asks a member, by its peer URL, for the members it has applied, without the
// removed IDs; creds dial an https:// peer URL (nil without peer TLS settings).
func FetchMembership(ctx context.Context, peerURL string, creds credentials.TransportCredentials) (*ClusterInfo, error) {
	conn, err := transport.Dial(peerURL, creds)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return ask(ctx, conn, peerURL, &pb.MembershipRequest{WithoutRemoved: true})
}

// RemovalOn asks the member at peerURL, on a connection already made to it, for its membership
// with the removed IDs and the event that removed member id (ClusterInfo.Removal), so that a
// removed member can tell a forced removal from another.
func RemovalOn(ctx context.Context, conn *grpc.ClientConn, peerURL string, id membership.ID) (*ClusterInfo, error) {
	return ask(ctx, conn, peerURL, &pb.MembershipRequest{RemovalOf: uint64(id)})
}

func ask(ctx context.Context, conn *grpc.ClientConn, peerURL string, req *pb.MembershipRequest) (*ClusterInfo, error) {
	a, err := pb.NewMembersClient(conn).Membership(ctx, req)
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
			// Unreachable, or refused at the TLS handshake: gRPC's words say which.
			return nil, fmt.Errorf("%s: %s", peerURL, st.Message())
		}
		return nil, fmt.Errorf("%s: %w", peerURL, fromPeer(err))
	}
	info := &ClusterInfo{Cluster: wire.ClusterFromProto(a.GetCluster()), Applied: a.GetApplied(), Leader: membership.ID(a.GetLeader())}
	if a.GetRemoval() != nil {
		ev := wire.EventsFromProto([]*pb.Event{a.GetRemoval()})[0]
		info.Removal = &ev
	}
	return info, nil
}
