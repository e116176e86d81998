package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// The refusals a receiver sends back: the registry's (pkg/rpcerr), by their exact text.
var (
	ErrClusterIDMismatch error = rpcerr.ErrClusterIDMismatch
	errWrongMember       error = rpcerr.ErrWrongMember
)

// Handler is the local member as the transport sees it.
type Handler interface {
	Step(ctx context.Context, m *raftpb.Message) error
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, ok bool)
	// MarkRemoved stops the member, which a peer has refused as removed. It must not block:
	// it is called from request handlers and send loops, possibly after the member stopped.
	MarkRemoved()
	Cluster() *membership.Cluster
	// PeerStarted is told that a peer has just started (its Hello), so that a leader reaches
	// it with its next append now rather than at its next heartbeat.
	PeerStarted(id uint64)
}

// Config configures a Transport.
type Config struct {
	LocalID   membership.ID
	ClusterID membership.ID
	Logger    *slog.Logger
}

// Transport is the peer side of a member.
type Transport struct {
	cfg Config
	h   Handler

	mu        sync.Mutex
	peers     map[membership.ID]*peer
	lastHeard map[membership.ID]time.Time
	closed    bool
}

// New returns a transport; Attach the local member before serving or sending.
func New(cfg Config) *Transport {
	return &Transport{cfg: cfg, peers: map[membership.ID]*peer{}, lastHeard: map[membership.ID]time.Time{}}
}

// Attach sets the member that receives messages.
func (t *Transport) Attach(h Handler) { t.h = h }

var raftStreamDesc = grpc.StreamDesc{StreamName: "Raft", ClientStreams: true}

const raftMethod = "/clusterd.peer.v1.Peer/Raft"

// Register adds the raft stream service to a peer gRPC server.
func (t *Transport) Register(s *grpc.Server) {
	desc := raftStreamDesc
	desc.Handler = func(_ any, stream grpc.ServerStream) error { return t.receive(stream) }
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "clusterd.peer.v1.Peer",
		HandlerType: (*any)(nil),
		Streams:     []grpc.StreamDesc{desc},
		Methods: []grpc.MethodDesc{
			{MethodName: "Removed", Handler: t.unary(func(n *notice) {
				t.cfg.Logger.Error("a peer reports that this member has been removed from the cluster", "peer", membership.ID(n.From).String())
				t.h.MarkRemoved()
			})},
			{MethodName: "Hello", Handler: t.unary(func(n *notice) {
				if t.h.Cluster().IsRemoved(membership.ID(n.From)) {
					return
				}
				t.mu.Lock()
				p := t.peers[membership.ID(n.From)]
				t.mu.Unlock()
				if p != nil {
					p.wake()
				}
				t.heard(membership.ID(n.From))
				t.h.PeerStarted(n.From)
			})},
		},
	}, struct{}{})
}

// notice is a one-off message between members, outside raft:
//   - Removed tells a member that the sender applied its removal. A removed member learns of its
//     removal from the commit that contains it, but the leader stops sending to it as soon as it
//     applies that commit, so the member would otherwise find out only when it next campaigns.
//   - Hello tells a member that the sender has just started, so that it stops backing off from
//     the sender and, if it leads, sends it an append at once: a member added while it was not
//     running yet would otherwise wait out the backoff and then the next heartbeat (up to
//     --heartbeat-interval) before the leader's first message.
type notice struct {
	ClusterID uint64 `json:"clusterID"`
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
}

const (
	removedMethod = "/clusterd.peer.v1.Peer/Removed"
	helloMethod   = "/clusterd.peer.v1.Peer/Hello"
)

// unary serves a notice meant for this member of this cluster.
func (t *Transport) unary(handle func(*notice)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		n := &notice{}
		if err := dec(n); err != nil {
			return nil, err
		}
		if n.ClusterID != uint64(t.cfg.ClusterID) || n.To != uint64(t.cfg.LocalID) {
			return nil, status.Error(codes.FailedPrecondition, ErrClusterIDMismatch.Error())
		}
		handle(n)
		return &ack{}, nil
	}
}

// Greet tells every known peer that this member has started. It does not wait for answers.
func (t *Transport) Greet() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.peers {
		urls, _ := p.address()
		go t.notify(helloMethod, id, urls)
	}
}

// notifyRemoved tells a removed peer, at each of its URLs until one answers, that it is gone.
func (t *Transport) notifyRemoved(id membership.ID, urls []string) { t.notify(removedMethod, id, urls) }

// notify sends a notice to a peer at each of its URLs until one answers.
func (t *Transport) notify(method string, id membership.ID, urls []string) {
	n := &notice{ClusterID: uint64(t.cfg.ClusterID), From: uint64(t.cfg.LocalID), To: uint64(id)}
	for _, u := range urls {
		conn, err := Dial(u)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = conn.Invoke(ctx, method, n, &ack{})
		cancel()
		conn.Close()
		if err == nil {
			return
		}
	}
}

type ack struct{}

func (t *Transport) receive(stream grpc.ServerStream) error {
	for {
		env := &Envelope{}
		if err := stream.RecvMsg(env); err != nil {
			if errors.Is(err, io.EOF) {
				return stream.SendMsg(&ack{})
			}
			return err
		}
		if err := t.check(env); err != nil {
			return status.Error(codes.FailedPrecondition, err.Error())
		}
		t.heard(membership.ID(env.From))
		if err := t.h.Step(stream.Context(), env.Message); err != nil {
			return status.Error(codes.Unavailable, err.Error())
		}
	}
}

func (t *Transport) check(env *Envelope) error {
	switch {
	case env.ClusterID != uint64(t.cfg.ClusterID):
		return ErrClusterIDMismatch
	case t.h.Cluster().IsRemoved(membership.ID(env.From)):
		return membership.ErrIDRemoved
	case env.To != uint64(t.cfg.LocalID):
		return errWrongMember
	}
	return nil
}

func (t *Transport) heard(id membership.ID) {
	now := time.Now()
	t.mu.Lock()
	t.lastHeard[id] = now
	t.mu.Unlock()
}

// HeardWithin reports whether a message from id arrived within d.
func (t *Transport) HeardWithin(id membership.ID, d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.lastHeard[id]
	return ok && time.Since(at) <= d
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
			continue
		}
		p := newPeer(t, id, m.PeerURLs)
		t.peers[id] = p
		go p.run()
	}
	// The peers, not the removed IDs: those are as many as the cluster's whole history.
	for id, p := range t.peers {
		if c.IsRemoved(id) {
			p.close()
			delete(t.peers, id)
			urls, _ := p.address()
			go t.notifyRemoved(id, urls)
		}
	}
}

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

// Close stops every peer.
func (t *Transport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for id, p := range t.peers {
		p.close()
		delete(t.peers, id)
	}
}

// Dial opens a client connection to a peer URL for the server's own peer calls.
func Dial(peerURL string) (*grpc.ClientConn, error) {
	target, err := Target(peerURL)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A member that was down is reached again within a heartbeat or two of its return,
		// not after gRPC's default backoff of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: time.Second,
		}),
		grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window),
		grpc.WithDefaultCallOptions(CallCodec(), grpc.MaxCallRecvMsgSize(MaxMessageSize)))
}

// Window is the flow-control window, per stream and per connection, of a member's end of every
// connection it makes or accepts, to peers and from clients. It is fixed instead of grpc's
// default dynamic window: that window's bandwidth estimator pings the other side whenever data
// arrives, and on this traffic, small raft messages and small answers, the pings and their
// answers were half of every member's socket writes and reads (docs/benchmarks.md). A client
// keeps whatever window it chose (clusterctl and etcdctl keep grpc's), and the member answers its
// pings. 1 MiB holds raft's largest append and is more than a LAN's bandwidth times its round
// trip; a larger message still passes, as grpc widens a stream's window to a message being read.
const Window = 1 << 20

// ServerWindow is Window as options for a gRPC server.
func ServerWindow() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(Window), grpc.StaticConnWindowSize(Window)}
}

// maxBackoff bounds the wait between two attempts to reach a peer: short, so that a member
// that comes back (or starts for the first time after member add) hears from the leader within
// about a heartbeat; dialing a dead loopback or LAN address ten times a second costs nothing.
const maxBackoff = 100 * time.Millisecond

// MaxMessageSize bounds one peer message; raft batches appends to 1 MiB.
const MaxMessageSize = 64 << 20

// Target turns a URL into a gRPC dial target.
func Target(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	switch p.Scheme {
	case "http":
		return "passthrough:///" + p.Host, nil
	case "unix":
		return "unix://" + p.Path, nil
	}
	return "", fmt.Errorf("unsupported URL scheme %q in %s (clusterd serves plain http and unix sockets)", p.Scheme, u)
}

// peer sends to one remote member over one stream at a time.
type peer struct {
	t     *Transport
	id    membership.ID
	q     chan *raftpb.Message
	stop  chan struct{}
	woken chan struct{} // the peer said hello: stop backing off
	once  sync.Once

	mu   sync.Mutex
	urls []string
	gen  int // bumped when urls change, so the sender reconnects
}

const queueSize = 4096

func newPeer(t *Transport, id membership.ID, urls []string) *peer {
	return &peer{t: t, id: id, q: make(chan *raftpb.Message, queueSize), stop: make(chan struct{}), woken: make(chan struct{}, 1), urls: urls}
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

func (p *peer) wake() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// run keeps a stream open to the peer while there is something to send, reconnecting with a
// short backoff; messages that arrive while it cannot send are dropped and reported.
func (p *peer) run() {
	var conn *grpc.ClientConn
	connGen := -1
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := 50 * time.Millisecond
	var logged string
	next := 0 // which of the peer's URLs to dial: the next one after a failure
	for {
		select {
		case <-p.stop:
			return
		case <-p.woken:
			backoff = 50 * time.Millisecond
			if conn != nil {
				conn.ResetConnectBackoff()
			}
		case first := <-p.q:
			urls, gen := p.address()
			if gen != connGen || conn == nil {
				if conn != nil {
					conn.Close()
					conn = nil
				}
				var err error
				if conn, err = Dial(urls[next%len(urls)]); err != nil {
					p.t.report(first, false)
					continue
				}
				connGen = gen
			}
			err := p.stream(conn, first)
			if err == nil {
				backoff = 50 * time.Millisecond
				continue
			}
			if st, ok := status.FromError(err); ok && st.Message() == membership.ErrIDRemoved.Error() {
				p.t.cfg.Logger.Error("a peer refused this member as removed from the cluster", "peer", p.id.String())
				p.t.h.MarkRemoved()
				return
			}
			if conn != nil {
				conn.Close()
				conn = nil
			}
			next++
			if msg := err.Error(); msg != logged {
				// One line per kind of failure, not one per retry.
				p.t.cfg.Logger.Warn("cannot send to peer", "peer", p.id.String(), "err", msg)
				logged = msg
			}
			p.pause(backoff)
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// stream sends first and everything queued after it on one stream, until the queue stays
// empty for a while or sending fails.
func (p *peer) stream(conn *grpc.ClientConn, first *raftpb.Message) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := conn.NewStream(ctx, &raftStreamDesc, raftMethod)
	if err != nil {
		p.t.report(first, false)
		return err
	}
	// The receiver answers only by ending the stream, with a status that says why (a refusal,
	// or its shutdown): watch for it, so that a refusal is seen at once and not at the next send.
	ended := make(chan error, 1)
	go func() { ended <- s.RecvMsg(&ack{}) }()
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	m := first
	for {
		env := &Envelope{ClusterID: uint64(p.t.cfg.ClusterID), From: uint64(p.t.cfg.LocalID), To: uint64(p.id), Message: m}
		if err := s.SendMsg(env); err != nil {
			p.t.report(m, false)
			if errors.Is(err, io.EOF) {
				err = <-ended
			}
			return err
		}
		p.t.report(m, true)
		idle.Reset(time.Minute)
		select {
		case m = <-p.q:
		case err := <-ended:
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("peer ended the stream")
			}
			return err
		case <-idle.C:
			s.CloseSend()
			return nil
		case <-p.stop:
			s.CloseSend()
			return nil
		}
	}
}

// pause waits, dropping and reporting whatever is queued meanwhile, until d passes or the peer
// says hello.
func (p *peer) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-p.q:
			p.t.report(m, false)
		case <-t.C:
			return
		case <-p.woken:
			p.wake() // run sees it too and resets the backoff
			return
		case <-p.stop:
			return
		}
	}
}
