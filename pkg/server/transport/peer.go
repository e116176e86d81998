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
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// peer sends to one remote member over one stream at a time.
type peer struct {
	t     *Transport
	id    membership.ID
	q     chan *raftpb.Message
	stop  chan struct{}
	woken chan struct{} // the peer said hello: stop backing off
	hello chan struct{} // greet the peer (Transport.Greet)
	once  sync.Once

	// remote: added from a sender's stream, not from the membership, so without a prober until
	// the membership lists it (Transport.answerSender); guarded by Transport.mu.
	remote bool
	// removed: the peer was removed from the membership, and what is queued for it still goes
	// (flush) before its sender stops.
	removed atomic.Bool

	mu   sync.Mutex
	urls []string
	gen  int // bumped when urls change, so the sender reconnects
}

const queueSize = 4096

func newPeer(t *Transport, id membership.ID, urls []string) *peer {
	return &peer{t: t, id: id, q: make(chan *raftpb.Message, queueSize), stop: make(chan struct{}), woken: make(chan struct{}, 1), hello: make(chan struct{}, 1), urls: urls}
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

// retire stops the sender of a peer removed from the membership, once it has sent what raft
// queued for the peer while it was a member (flush).
func (p *peer) retire() {
	p.removed.Store(true)
	p.close()
}

func (p *peer) wake() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// run keeps a stream open to the peer while there is something to send, reconnecting with a
// short backoff; messages that arrive while it cannot send are dropped and reported (to raft,
// while the peer is a member).
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
	// connect makes sure conn is a connection to the peer's current URLs.
	connect := func() error {
		urls, gen := p.address()
		if gen == connGen && conn != nil {
			return nil
		}
		if conn != nil {
			conn.Close()
			conn = nil
		}
		var err error
		if conn, err = p.t.Dial(urls[next%len(urls)]); err != nil {
			return err
		}
		connGen = gen
		return nil
	}
	// woke: the peer has just started. A connection that is not up was made to its old process,
	// or is backing off from a port nobody listened on: the next message dials afresh. (Not
	// ResetConnectBackoff: grpc reads its subconnections unlocked there, a race with a
	// connection that is being made.)
	woke := func() {
		backoff = 50 * time.Millisecond
		if conn != nil && conn.GetState() != connectivity.Ready {
			conn.Close()
			conn = nil
		}
	}
	// last sends a removed peer what raft queued for it while it was a member, m first if
	// pause kept it, in one try as the sender stops (stream flushes the rest).
	last := func(m *raftpb.Message) {
		if !p.removed.Load() {
			return
		}
		if m == nil && len(p.q) > 0 {
			m = <-p.q // only this goroutine takes from the queue
		}
		if m != nil && connect() == nil {
			_ = p.stream(conn, m)
		}
	}
	var first *raftpb.Message // what to send next: taken from the queue, or kept by pause
	for {
		if first == nil {
			select {
			case <-p.stop:
				last(nil)
				return
			case <-p.woken:
				woke()
				continue
			case <-p.hello:
				var c *grpc.ClientConn
				if connect() == nil {
					c = conn
				}
				n := p.t.notice(p.id)
				urls, _ := p.address()
				go p.t.hello(c, n, urls)
				continue
			case first = <-p.q:
			}
		}
		m := first
		first = nil
		if err := connect(); err != nil {
			p.report(m, false)
			continue
		}
		err := p.stream(conn, m)
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if errors.Is(rpcerr.FromStatus(err), membership.ErrIDRemoved) {
			// A hint, as a Removed notice is: the peer may be stale, or forced into a new
			// cluster. The member asks the cluster, and goes on trying meanwhile.
			p.t.claimRemoved()
		}
		if conn != nil {
			conn.Close()
			conn = nil
		}
		next++
		if msg := err.Error(); msg != logged {
			// One line per kind of failure, not one per retry.
			if OlderProtocol(err) {
				p.t.cfg.Logger.Warn(olderProtocolLine(p.id), "err", msg)
			} else {
				p.t.cfg.Logger.Warn("cannot send to peer", "peer", p.id.String(), "err", msg)
			}
			logged = msg
		}
		// What pause keeps is tried first. A removed peer is tried once more (last) and no
		// more: a dead peer is not dialed once per queued message.
		var hello bool
		if hello, first = p.pause(backoff); hello {
			woke()
		} else {
			backoff = min(2*backoff, maxBackoff)
		}
		if p.removed.Load() { // retire sets it before it closes stop
			last(first)
			return
		}
		select {
		case <-p.stop: // the transport is closing
			return
		default:
		}
	}
}

// streamIdle is how long a sender keeps a stream open with nothing to send.
const streamIdle = time.Minute

// stream sends first and everything queued after it on one stream, until the queue stays
// empty for streamIdle or sending fails.
func (p *peer) stream(conn *grpc.ClientConn, first *raftpb.Message) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if self := p.t.h.Cluster().Member(p.t.cfg.LocalID); self != nil && len(self.PeerURLs) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.PeerURLs, strings.Join(self.PeerURLs, ","))
	}
	s, err := pb.NewPeerClient(conn).Raft(ctx)
	if err != nil {
		p.report(first, false)
		return err
	}
	// The receiver answers only by ending the stream, with a status that says why (a refusal,
	// or its shutdown): watch for it, so that a refusal is seen at once and not at the next send.
	ended := make(chan error, 1)
	go func() { ended <- s.RecvMsg(&pb.Ack{}) }()
	idle := time.NewTimer(streamIdle)
	defer idle.Stop()
	m := first
	for {
		if err := p.send(s, m, ended); err != nil {
			return err
		}
		idle.Reset(streamIdle)
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
			if p.removed.Load() {
				return p.flush(s, ended)
			}
			s.CloseSend()
			return nil
		}
	}
}

// send sends m on s, and reports how it went; ended is the end of the stream, which says why
// the receiver refused it.
func (p *peer) send(s pb.Peer_RaftClient, m *raftpb.Message, ended <-chan error) error {
	env := &pb.Envelope{ClusterId: uint64(p.t.cfg.ClusterID), From: uint64(p.t.cfg.LocalID), To: uint64(p.id), Message: m}
	crashpoint.HitIf(m.GetType() == raftpb.MessageType_MsgSnap, crashpoint.SnapshotSendBefore)
	err := s.Send(env)
	p.report(m, err == nil)
	if err == nil && !p.removed.Load() {
		p.t.cfg.Metrics.PeerSent(uint64(p.id), proto.Size(env))
	}
	if errors.Is(err, io.EOF) {
		err = <-ended
	}
	return err
}

// flushWait bounds how long a removed peer's sender waits for the peer to take what was flushed
// to it: as long as a notice's answer (invoke).
const flushWait = time.Second

// flush sends a removed peer what raft queued for it while it was a member, ends the stream and
// waits, flushWait at most, until the peer has taken it (a stream cancelled at once would drop
// what is still in flight). What the leader queued holds the commit of the peer's own removal:
// with it, the peer applies its removal and stops at once, instead of learning it from a refusal
// or a Removed notice and confirming it with the cluster's voters first, while its clients wait.
// Delivering a member's messages after its removal is only a delay, which the network may always
// add.
func (p *peer) flush(s pb.Peer_RaftClient, ended <-chan error) error {
	// Only this goroutine takes from the queue, and nothing is queued for a removed peer.
	for len(p.q) > 0 {
		if err := p.send(s, <-p.q, ended); err != nil {
			return err
		}
	}
	s.CloseSend()
	select {
	case <-ended:
	case <-time.After(flushWait):
	}
	return nil
}

// report tells raft how sending m went, and counts a failure, while the peer is a member: raft
// no longer tracks a removed peer, and its series went with it.
func (p *peer) report(m *raftpb.Message, ok bool) {
	if !p.removed.Load() {
		p.t.report(m, ok)
	}
}

// pause waits, dropping and reporting whatever is queued meanwhile, until d passes, the peer
// says hello or the sender stops. A message it takes once the peer has said hello, or once the
// peer is removed, is not dropped but returned (keep), to be tried first: the transport wakes
// the sender before its member may answer the greeting (Hello), so the first answer, often a
// heartbeat a new member waits for, finds the hello pending whichever case the select picks; and
// what is still queued for a removed peer goes in the sender's last try (run's last). A message
// taken before then is dropped, the commit of the peer's own removal too: the peer was not
// reachable, and learns of its removal as a stopped member does.
func (p *peer) pause(d time.Duration) (hello bool, keep *raftpb.Message) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case m := <-p.q:
			select {
			case <-p.woken:
				return true, m
			default:
			}
			if p.removed.Load() { // set before stop is closed (retire)
				return false, m
			}
			p.report(m, false)
		case <-t.C:
			return false, nil
		case <-p.woken:
			return true, nil
		case <-p.stop:
			return false, nil
		}
	}
}
