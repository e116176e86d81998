package transport

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/crashpoint"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// peer sends to one remote member over one stream at a time.
type peer struct {
	t     *Transport
	id    membership.ID
	q     chan *raftpb.Message
	stop  chan struct{}
	woken atomic.Bool   // the peer said hello: a connection that is not up is dialed afresh
	hello chan struct{} // greet the peer (Transport.Greet)
	once  sync.Once

	// remote: added from a sender's stream, not from the membership, so without a prober until
	// the membership lists it (Transport.answerSender); guarded by Transport.mu.
	remote bool
	// removed: the peer was removed from the membership: how its sends went is raft's business
	// no more (report).
	removed atomic.Bool

	mu   sync.Mutex
	urls []string
	gen  int // bumped when urls change, so the sender reconnects
}

const queueSize = 4096

func newPeer(t *Transport, id membership.ID, urls []string) *peer {
	return &peer{t: t, id: id, q: make(chan *raftpb.Message, queueSize), stop: make(chan struct{}), hello: make(chan struct{}, 1), urls: urls}
}

func (p *peer) setURLs(urls []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Join(p.urls, ",") != strings.Join(urls, ",") {
		p.urls, p.gen = urls, p.gen+1
	}
}

func (p *peer) address() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.urls, p.gen
}

func (p *peer) enqueue(m *raftpb.Message) bool {
	select {
	case p.q <- m:
		return true
	default:
		return false
	}
}

func (p *peer) close() { p.once.Do(func() { close(p.stop) }) }

// retire stops the sender of a peer removed from the membership; what is still queued for it
// is dropped. The peer learns of its removal from the entry if it got it, else from a refusal
// or the Removed notice, confirmed with the cluster (pkg/server, watchRemoval): a removed
// follower exits within tens of milliseconds of the removal either way.
func (p *peer) retire() {
	p.removed.Store(true)
	p.close()
}

// wake is the peer's hello: it has just started, so a connection still backing off from the
// port nobody listened on is dialed afresh at the next message.
func (p *peer) wake() { p.woken.Store(true) }

// streamIdle is how long a sender keeps a stream open with nothing to send.
const streamIdle = time.Minute

// run sends what raft queues for the peer, in order, over one stream kept open while there is
// something to send. It has one retry policy, grpc's reconnect backoff on the connection
// (dial.go): it never waits itself. A message that cannot be sent now is dropped and reported
// (to raft, while the peer is a member), and raft sends again.
func (p *peer) run() {
	s := &outbox{p: p}
	defer s.closeConn()
	idle := time.NewTimer(streamIdle)
	defer idle.Stop()
	for {
		// The stop first: a removed or closing peer is not tried once for each queued message.
		select {
		case <-p.stop:
			s.endStream()
			return
		default:
		}
		select {
		case <-p.stop:
			s.endStream()
			return
		case <-p.hello:
			s.greet()
		case err := <-s.ended:
			// The receiver ended the stream: a refusal, or its shutdown.
			s.failed(err)
		case <-idle.C:
			s.endStream()
		case m := <-p.q:
			s.send(m)
			idle.Reset(streamIdle)
		}
	}
}

// outbox is the state of a peer's run loop: its connection and stream. Only run's goroutine
// uses it.
type outbox struct {
	p       *peer
	conn    *grpc.ClientConn
	connGen int
	next    int // which of the peer's URLs to dial: the next one after a failure
	stream  pb.Peer_RaftClient
	cancel  context.CancelFunc
	ended   chan error // the stream's end as the receiver says it; nil without a stream
	logged  string     // the last failure logged: one line per kind, not one per message
}

// connect makes sure s.conn is a connection to the peer's current URLs: dialed afresh when they
// changed, and after a hello when the connection is not up.
func (s *outbox) connect() error {
	urls, gen := s.p.address()
	if s.conn != nil && (gen != s.connGen || s.p.woken.Swap(false) && s.conn.GetState() != connectivity.Ready) {
		s.closeConn()
	}
	if s.conn != nil {
		return nil
	}
	conn, err := s.p.t.Dial(urls[s.next%len(urls)])
	if err != nil {
		return err
	}
	s.conn, s.connGen = conn, gen
	return nil
}

// open makes sure a stream is open, naming this member's peer URLs so that a peer that does not
// know it yet can answer (answerSender). The receiver answers only by ending the stream, with a
// status that says why: ended delivers it, so that a refusal is seen at once.
func (s *outbox) open() error {
	if s.stream != nil {
		return nil
	}
	if err := s.connect(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if self := s.p.t.h.Cluster().Member(s.p.t.cfg.LocalID); self != nil && len(self.PeerURLs) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.PeerURLs, strings.Join(self.PeerURLs, ","))
	}
	stream, err := pb.NewPeerClient(s.conn).Raft(ctx)
	if err != nil {
		cancel()
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- stream.RecvMsg(&pb.Ack{}) }()
	s.stream, s.cancel, s.ended = stream, cancel, ended
	return nil
}

// send sends m and reports how it went; a failure ends the stream.
func (s *outbox) send(m *raftpb.Message) {
	if err := s.open(); err != nil {
		s.p.report(m, false)
		s.failed(err)
		return
	}
	env := &pb.Envelope{ClusterId: uint64(s.p.t.cfg.ClusterID), From: uint64(s.p.t.cfg.LocalID), To: uint64(s.p.id), Message: m}
	crashpoint.HitIf(m.GetType() == raftpb.MessageType_MsgSnap, crashpoint.SnapshotSendBefore)
	err := s.stream.Send(env)
	s.p.report(m, err == nil)
	if err == nil {
		if !s.p.removed.Load() {
			s.p.t.cfg.Metrics.PeerSent(uint64(s.p.id), proto.Size(env))
		}
		return
	}
	if errors.Is(err, io.EOF) {
		// The receiver ended the stream; its status says why.
		err = <-s.ended
	}
	s.failed(err)
}

// failed handles a stream that failed or was ended by the receiver: the stream goes, a refusal
// as removed is a claim to check (RemovalClaims), a peer of several URLs is tried at the next
// one, and each kind of failure is logged once.
func (s *outbox) failed(err error) {
	s.endStream()
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("peer ended the stream")
	}
	// A hint, as a Removed notice is: the peer may be stale, or forced into a new cluster.
	s.p.t.claimIfRefusedAsRemoved(err)
	if urls, _ := s.p.address(); len(urls) > 1 {
		s.closeConn()
		s.next++
	}
	if msg := err.Error(); msg != s.logged {
		if OlderProtocol(err) {
			s.p.t.cfg.Logger.Warn(olderProtocolLine(s.p.id), "err", msg)
		} else {
			s.p.t.cfg.Logger.Warn("cannot send to peer", "peer", s.p.id.String(), "err", msg)
		}
		s.logged = msg
	}
}

// greet sends the peer this member's hello over the connection its messages take (or one of its
// own when that cannot be had), without waiting for the answer.
func (s *outbox) greet() {
	var conn *grpc.ClientConn
	if s.connect() == nil {
		conn = s.conn
	}
	urls, _ := s.p.address()
	go s.p.t.hello(conn, s.p.t.notice(s.p.id), urls)
}

// endStream closes the stream, if one is open.
func (s *outbox) endStream() {
	if s.stream == nil {
		return
	}
	s.stream.CloseSend()
	s.cancel()
	s.stream, s.cancel, s.ended = nil, nil, nil
}

func (s *outbox) closeConn() {
	s.endStream()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// report tells raft how sending m went, and counts a failure, while the peer is a member: raft
// no longer tracks a removed peer, and its series went with it.
func (p *peer) report(m *raftpb.Message, ok bool) {
	if !p.removed.Load() {
		p.t.report(m, ok)
	}
}
