package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/crashpoint"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// The refusals a receiver sends back: the registry's (pkg/rpcerr), by their exact text.
var (
	ErrClusterIDMismatch error = rpcerr.ErrClusterIDMismatch
	errWrongMember       error = rpcerr.ErrWrongMember
)

// Handler is the local member as the transport sees it.
type Handler interface {
	// Step hands a peer's message to raft. An error is a message refused (one carrying a
	// snapshot or an entry the member could not apply), raft.ErrStopped, or ctx's.
	Step(ctx context.Context, m *raftpb.Message) error
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, ok bool)
	Cluster() *membership.Cluster
	// PeerLost is told that the connection with member id broke: the last of its streams to
	// this member ended, or a send to it failed.
	PeerLost(id membership.ID)
}

// Config configures a Transport.
type Config struct {
	LocalID   membership.ID
	ClusterID membership.ID
	Logger    *slog.Logger
	// Metrics counts the bytes sent to and received from each peer and the messages dropped;
	// nil for none.
	Metrics *metrics.Metrics
	// PeerCreds dial the https:// peer URLs; nil when this member has no peer TLS settings.
	PeerCreds credentials.TransportCredentials
	// ProbeInterval is how often each peer's round trip is measured, for
	// etcd_network_peer_round_trip_time_seconds; ProbeInterval (etcd's) when zero. Without
	// Metrics nothing is probed.
	ProbeInterval time.Duration
	// PeerAllowedCNs is --peer-cert-allowed-cn: over peer TLS, a certificate with one of these
	// CNs may speak for any member; any other speaks only for the members whose peer URL hosts
	// it covers (identity.go).
	PeerAllowedCNs []string
	// PeerAllowedHostnames is --peer-cert-allowed-hostname: when set, the handshake took only a
	// certificate valid for one of these names, and such a certificate may speak for any member
	// at a peer URL with a host (not for a unix socket's).
	PeerAllowedHostnames []string
}

// Dial opens a connection to a peer URL with this member's peer credentials.
func (t *Transport) Dial(peerURL string) (*grpc.ClientConn, error) {
	return Dial(peerURL, t.cfg.PeerCreds)
}

// Transport is the peer side of a member.
type Transport struct {
	cfg Config
	h   Handler

	mu     sync.Mutex
	peers  map[membership.ID]*peer
	closed bool
	// streams counts each vouched sender's open raft streams to this member: when the last one
	// ends, the sender is lost (Handler.PeerLost).
	streams map[membership.ID]int

	// claims wakes whoever checks this member's removal with the cluster (RemovalClaims).
	claims  chan struct{}
	ignored *ignoredLog

	probes sync.WaitGroup // every peer's prober, which Close waits for
}

// New returns a transport; Attach the local member before serving or sending.
func New(cfg Config) *Transport {
	return &Transport{cfg: cfg, peers: map[membership.ID]*peer{}, streams: map[membership.ID]int{}, claims: make(chan struct{}, 1),
		ignored: newIgnoredLog(cfg.Logger, ignoredInterval)}
}

// Attach sets the member that receives messages.
func (t *Transport) Attach(h Handler) { t.h = h }

// Register adds the peer service (clusterdpb.Peer: the raft stream and the notices) to a peer
// gRPC server.
func (t *Transport) Register(s *grpc.Server) { pb.RegisterPeerServer(s, &peerService{t: t}) }

// peerService serves clusterdpb.Peer for a Transport. A notice is a one-off message between
// members, outside raft, and none is believed: each is a hint that at most makes this member look
// again.
//   - Removed tells a member that the sender applied its removal. A removed member learns of its
//     removal from the commit that contains it, but the leader stops sending to it as soon as it
//     applies that commit, so the member would otherwise find out only when it next campaigns.
//     The member then asks the cluster (RemovalClaims); only a majority of its voters' word is
//     proof, so a stranger's notice, a stale one, or a forced member's, is logged and ignored.
//   - Hello tells a member that the sender has just started, so that its sender to the peer
//     dials afresh a connection that is not up: a member added while it was not running yet
//     would otherwise wait out grpc's backoff before its first message. No message of the
//     greeting's reaches raft.
//   - Probe is answered at once, touching nothing: its time is the round trip (probe.go).
type peerService struct {
	pb.UnimplementedPeerServer
	t *Transport
}

func (s *peerService) Raft(stream pb.Peer_RaftServer) error { return s.t.receive(stream) }

// Removed is a hint to check, never the proof: the member asks the cluster (RemovalClaims).
func (s *peerService) Removed(ctx context.Context, n *pb.Notice) (*pb.Ack, error) {
	return s.t.serveNotice(ctx, n, func(from sender) {
		s.t.ignored.log("a peer says this member has been removed from the cluster; asking the cluster to confirm it",
			from, "peer", membership.ID(n.GetFrom()).String())
		s.t.claimRemoved()
	})
}

// Hello is a hint too: this member's sender to the peer dials afresh a connection that is not
// up, so that the next message raft sends it is tried at once. Raft's view of the peer changes
// only when the peer answers.
func (s *peerService) Hello(ctx context.Context, n *pb.Notice) (*pb.Ack, error) {
	t := s.t
	return t.serveNotice(ctx, n, func(from sender) {
		id := membership.ID(n.GetFrom())
		m := t.h.Cluster().Member(id)
		if m == nil {
			return
		}
		if err := t.vouch(from, id, m.PeerURLs); err != nil {
			t.ignored.log("ignored a greeting", from, "peer", id.String(), "err", err.Error())
			return
		}
		t.mu.Lock()
		p := t.peers[id]
		t.mu.Unlock()
		if p != nil {
			p.wake()
		}
	})
}

func (s *peerService) Probe(ctx context.Context, n *pb.Notice) (*pb.Ack, error) {
	return s.t.serveNotice(ctx, n, func(sender) {})
}

// serveNotice hands handle a notice meant for this member of this cluster; a notice for another
// cluster or member is refused, and logged (rate-limited) with who sent it. A notice from a
// member this one has removed is refused as its raft messages are, so that the sender's prober
// hears it (a hint, RemovalClaims) even when raft has nothing for this member: the follower of
// an old majority that another member forced into a new cluster without it.
func (t *Transport) serveNotice(ctx context.Context, n *pb.Notice, handle func(sender)) (*pb.Ack, error) {
	from := senderOf(ctx)
	if n.GetClusterId() != uint64(t.cfg.ClusterID) || n.GetTo() != uint64(t.cfg.LocalID) {
		t.ignored.log("refused a notice for another cluster or member", from,
			"peer", membership.ID(n.GetFrom()).String(), "cluster", membership.ID(n.GetClusterId()).String(), "to", membership.ID(n.GetTo()).String())
		return nil, rpcerr.Status(ErrClusterIDMismatch)
	}
	if t.h.Cluster().IsRemoved(membership.ID(n.GetFrom())) {
		return nil, rpcerr.Status(membership.ErrIDRemoved)
	}
	handle(from)
	return &pb.Ack{}, nil
}

// RemovalClaims is sent to when a peer says this member has been removed: by a Removed notice, or
// by refusing its messages as a removed member's. Whoever reads it asks the cluster; the channel
// holds one claim, so claims that come while one waits are one.
func (t *Transport) RemovalClaims() <-chan struct{} { return t.claims }

// claimIfRefusedAsRemoved makes a peer's refusal of this member as removed (of its raft stream,
// its probe or its greeting) a claim, and says whether err was one.
func (t *Transport) claimIfRefusedAsRemoved(err error) bool {
	if !errors.Is(rpcerr.FromStatus(err), membership.ErrIDRemoved) {
		return false
	}
	t.claimRemoved()
	return true
}

func (t *Transport) claimRemoved() {
	select {
	case t.claims <- struct{}{}:
	default:
	}
}

// Greet tells every known peer that this member has started. It does not wait for answers. Each greeting goes over the connection the peer's sender will
// use (peer.run), so that this member's first answers to the leader find it up already.
func (t *Transport) Greet() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.peers {
		select {
		case p.hello <- struct{}{}:
		default:
		}
	}
}

// hello sends peer p the greeting n over conn, the connection of p's sender (nil when it could
// not dial), else at each of p's URLs until one answers. A refusal as removed is an answer, and
// a claim.
func (t *Transport) hello(conn *grpc.ClientConn, n *pb.Notice, urls []string) {
	if conn != nil {
		if err := invoke(conn, pb.PeerClient.Hello, n); err == nil || t.claimIfRefusedAsRemoved(err) {
			return
		}
	}
	t.notify(pb.PeerClient.Hello, n, urls)
}

// notifyRemoved tells a removed peer, at each of its URLs until one answers, that it is gone.
func (t *Transport) notifyRemoved(id membership.ID, urls []string) {
	t.notify(pb.PeerClient.Removed, t.notice(id), urls)
}

// notice is a notice from this member to peer id.
func (t *Transport) notice(id membership.ID) *pb.Notice {
	return &pb.Notice{ClusterId: uint64(t.cfg.ClusterID), From: uint64(t.cfg.LocalID), To: uint64(id)}
}

// noticeCall is one of the notice methods of the generated client (pb.PeerClient.Hello, ...).
type noticeCall func(pb.PeerClient, context.Context, *pb.Notice, ...grpc.CallOption) (*pb.Ack, error)

// notify sends a notice to a peer at each of its URLs, on a connection of its own, until one
// answers.
func (t *Transport) notify(call noticeCall, n *pb.Notice, urls []string) {
	for _, u := range urls {
		conn, err := t.Dial(u)
		if err != nil {
			continue
		}
		err = invoke(conn, call, n)
		conn.Close()
		if err == nil {
			return
		}
	}
}

// invoke sends a notice on conn and waits a second at most for its answer.
func invoke(conn *grpc.ClientConn, call noticeCall, n *pb.Notice) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := call(pb.NewPeerClient(conn), ctx, n)
	return err
}

func (t *Transport) receive(stream pb.Peer_RaftServer) error {
	// One sender a stream, naming its URLs once, at the stream's start: its first message is
	// enough to make sure it can be answered, and the rest stay off t.mu. Its identity is
	// checked on that first message too, and every later one must name the same sender.
	// Every wait for an envelope is bounded (streamLimit): a stream that carries nothing is
	// closed, a stranger's soonest.
	from := senderOf(stream.Context())
	var sender membership.ID
	defer func() {
		if sender != 0 {
			t.streamEnded(sender)
		}
	}()
	in := newInbox(stream)
	defer in.stop()
	for {
		env, err := in.next(t.streamLimit(sender))
		if err != nil {
			if errors.Is(err, io.EOF) {
				return stream.SendAndClose(&pb.Ack{})
			}
			if errors.Is(err, errStreamIdle) {
				t.ignored.log("closed a raft stream that carried no message in time", from, "peer", sender.String())
				return status.Error(codes.DeadlineExceeded, err.Error())
			}
			return err
		}
		if err := t.check(env); err != nil {
			t.ignored.log("refused a peer's raft messages", from, "peer", membership.ID(env.GetFrom()).String(), "err", err.Error())
			return rpcerr.Status(err)
		}
		if sender == 0 {
			if err := t.vouchStream(stream.Context(), from, membership.ID(env.GetFrom())); err != nil {
				t.ignored.log("refused a peer's raft messages", from, "peer", membership.ID(env.GetFrom()).String(), "err", err.Error())
				return status.Error(codes.PermissionDenied, err.Error())
			}
			sender = membership.ID(env.GetFrom())
			t.streamStarted(sender)
			t.answerSender(stream.Context(), from, sender)
		} else if membership.ID(env.GetFrom()) != sender {
			return status.Error(codes.PermissionDenied, "a raft stream carries one sender's messages")
		}
		// Counted once checked: a refused sender's ID is not a member's, and would be a series.
		t.cfg.Metrics.PeerReceived(env.GetFrom(), proto.Size(env))
		crashpoint.HitIf(env.GetMessage().GetType() == raftpb.MessageType_MsgSnap, crashpoint.SnapshotReceive)
		if err := t.h.Step(stream.Context(), env.GetMessage()); err != nil {
			if stream.Context().Err() != nil || errors.Is(err, raft.ErrStopped) {
				return status.Error(codes.Unavailable, err.Error())
			}
			t.ignored.log("refused a peer's raft message", from, "peer", sender.String(), "err", err.Error())
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
}

// streamStarted counts a vouched sender's stream, before any of its messages is stepped.
func (t *Transport) streamStarted(id membership.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streams[id]++
}

// streamEnded uncounts a sender's stream; the end of its last one is the end of its connection
// to this member (its process stopped or its socket closed), and the member is told at once,
// under t.mu, so that a stream the sender opens meanwhile is either counted first or stepped
// after.
func (t *Transport) streamEnded(id membership.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streams[id]--; t.streams[id] > 0 {
		return
	}
	delete(t.streams, id)
	t.h.PeerLost(id)
}

// check refuses an envelope for another cluster or member, from a removed member, or whose
// raft message names other ends than the envelope: raft reads the sender from the message.
func (t *Transport) check(env *pb.Envelope) error {
	switch {
	case env.GetClusterId() != uint64(t.cfg.ClusterID):
		return ErrClusterIDMismatch
	case t.h.Cluster().IsRemoved(membership.ID(env.GetFrom())):
		return membership.ErrIDRemoved
	case env.GetTo() != uint64(t.cfg.LocalID):
		return errWrongMember
	case env.GetMessage().GetFrom() != env.GetFrom() || env.GetMessage().GetTo() != env.GetTo():
		return errWrongMember
	}
	return nil
}

// SetPeers learns peer addresses from a membership: members are added or updated, removed
// members are dropped. Members it does not mention are kept, so that a joining member can
// reach the peers it was told about before its first snapshot arrives.
func (t *Transport) SetPeers(c *membership.Cluster) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for id, m := range c.Members {
		if id == t.cfg.LocalID {
			continue
		}
		if p, ok := t.peers[id]; ok {
			p.setURLs(m.PeerURLs)
			if p.remote {
				p.remote = false
				t.startProbe(p)
			}
			continue
		}
		t.startProbe(t.addPeerLocked(id, m.PeerURLs))
	}
	// The peers, not the removed IDs: those are as many as the cluster's whole history.
	for id, p := range t.peers {
		if c.IsRemoved(id) {
			p.retire()
			delete(t.peers, id)
			t.cfg.Metrics.PeerRemoved(uint64(id))
			urls, _ := p.address()
			go t.notifyRemoved(id, urls)
		}
	}
}

// addPeerLocked opens the sender to a peer; called with t.mu held.
func (t *Transport) addPeerLocked(id membership.ID, urls []string) *peer {
	p := newPeer(t, id, urls)
	t.peers[id] = p
	go p.run()
	return p
}

// startProbe measures the round trip to a member of the membership, with Metrics; called with
// t.mu held.
func (t *Transport) startProbe(p *peer) {
	if t.cfg.Metrics != nil {
		interval := t.cfg.ProbeInterval
		if interval <= 0 {
			interval = ProbeInterval
		}
		t.probes.Add(1)
		go p.probe(interval)
	}
}

// answerSender makes sure a member that sent a raft message can be answered. A member that has
// not yet applied the addition of the sender (it was down, or cut off, while the sender joined)
// has no address for it, and without its answers the sender, its leader most likely, never learns
// where this member's log ends: this member would wait for ever for entries it cannot ask for.
// Every stream names its sender's peer URLs (wire.PeerURLs), and an unknown sender is added at
// them as a remote, as etcd adds one from a request's X-PeerURLs: no prober until the membership lists it, and
// then taken over by it (SetPeers), or closed with the sender's removal. Only at the URLs this
// member may dial (dialable): a URL a stranger names is never a unix socket's, and over peer TLS
// one its certificate speaks for.
func (t *Transport) answerSender(ctx context.Context, from sender, id membership.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	// The removal is checked again under t.mu: the member publishes a membership before it hands
	// it to SetPeers, so a removal applied since the stream's check is either seen here or finds
	// the remote in SetPeers and closes it.
	if t.closed || (p != nil && !p.remote) || id == t.cfg.LocalID || t.h.Cluster().IsRemoved(id) {
		return
	}
	urls := streamPeerURLs(ctx)
	if err := membership.ValidatePeerURLs(urls); err != nil {
		return
	}
	if urls = t.dialable(from, urls); len(urls) == 0 {
		t.ignored.log("not answering a sender the membership does not list: its stream names no peer URL this member may dial", from, "peer", id.String())
		return
	}
	if p != nil {
		p.setURLs(urls) // the sender moved (member update) while this member lags
		return
	}
	remotes := 0
	for _, q := range t.peers {
		if q.remote {
			remotes++
		}
	}
	if remotes >= maxRemotes {
		return
	}
	t.addPeerLocked(id, urls).remote = true
	t.cfg.Logger.Info("answering a peer this member's membership does not list yet, at the peer URLs its stream names", "peer", id.String(), "peer-urls", urls)
}

// maxRemotes bounds the remotes: a member lags behind a few additions at most, and a sender that
// never becomes a member (a stale process of the cluster) must not make this one dial without end.
const maxRemotes = 8

// wire.PeerURLs is the stream metadata that names the sender's peer URLs.

// Send queues messages for their peers; it never blocks.
func (t *Transport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		t.mu.Lock()
		p := t.peers[membership.ID(m.GetTo())]
		t.mu.Unlock()
		if p == nil || !p.enqueue(m) {
			t.report(m, false)
		}
	}
}

func (t *Transport) report(m *raftpb.Message, ok bool) {
	if m.GetType() == raftpb.MessageType_MsgSnap {
		t.h.ReportSnapshot(m.GetTo(), ok)
	}
	if !ok {
		t.h.ReportUnreachable(m.GetTo())
		t.h.PeerLost(membership.ID(m.GetTo()))
		t.cfg.Metrics.PeerSendFailed(m.GetTo())
	}
}

// PeerURLs returns every peer URL the transport knows.
func (t *Transport) PeerURLs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, p := range t.peers {
		urls, _ := p.address()
		out = append(out, urls...)
	}
	return out
}

// Close stops every peer, and returns once their probers have ended.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	for id, p := range t.peers {
		p.close()
		delete(t.peers, id)
	}
	t.mu.Unlock()
	t.probes.Wait()
}
