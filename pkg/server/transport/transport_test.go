package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/logtest"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// member is a Handler that records what reaches it.
type member struct {
	mu      sync.Mutex
	stepped []*raftpb.Message
	lost    []membership.ID
	cluster *membership.Cluster

	accepted    atomic.Int32 // connections its listener accepted
	unreachable atomic.Int32 // messages reported undelivered
}

func (m *member) Step(_ context.Context, msg *raftpb.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stepped = append(m.stepped, msg)
	return nil
}
func (m *member) ReportUnreachable(uint64)    { m.unreachable.Add(1) }
func (m *member) ReportSnapshot(uint64, bool) {}
func (m *member) PeerLost(id membership.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lost = append(m.lost, id)
}

func (m *member) lostPeers() []membership.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lost)
}

func (m *member) Cluster() *membership.Cluster {
	return m.cluster
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.stepped)
}

// serve starts a transport for local in cluster cid on a loopback port.
func serve(t *testing.T, local, cid membership.ID, c *membership.Cluster) (*Transport, *member, string) {
	t.Helper()
	return serveWithMetrics(t, local, cid, c, nil)
}

// serveWithMetrics is serve with the transport counting into m.
func serveWithMetrics(t *testing.T, local, cid membership.ID, c *membership.Cluster, m *metrics.Metrics) (*Transport, *member, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &member{cluster: c}
	l = countingListener{l, &h.accepted}
	tr := New(Config{LocalID: local, ClusterID: cid, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m})
	tr.Attach(h)
	s := grpc.NewServer()
	tr.Register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); tr.Close() })
	return tr, h, "http://" + l.Addr().String()
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func heartbeat(from, to uint64) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(1)}
}

// refusedURL is a peer URL on a loopback port nobody listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDelivers(t *testing.T) {
	c := membership.NewCluster(7, nil)
	_, receiver, url := serve(t, 2, 7, c)
	sender, _, _ := serve(t, 1, 7, c)
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))
	sender.Send([]*raftpb.Message{heartbeat(1, 2), heartbeat(1, 2)})
	waitFor(t, "delivery", func() bool { return receiver.count() == 2 })
}

// A member is told at once that a peer is lost: the receiver when the peer's stream ends (its
// process closed its side), the sender when a send to it fails; and not while the stream lives.
func TestPeerLostWhenTheConnectionBreaks(t *testing.T) {
	c := membership.NewCluster(7, nil)
	_, receiver, url := serve(t, 2, 7, c)
	sender, _, _ := serve(t, 1, 7, c)
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))
	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	waitFor(t, "delivery", func() bool { return receiver.count() == 1 })
	if lost := receiver.lostPeers(); len(lost) != 0 {
		t.Fatalf("lost %v while the stream lives", lost)
	}
	sender.Close()
	waitFor(t, "the receiver told of the sender's end", func() bool { return slices.Contains(receiver.lostPeers(), 1) })

	gone := refusedURL(t)
	again, againSide, _ := serve(t, 3, 7, c)
	again.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 4, PeerURLs: []string{gone}}}))
	again.Send([]*raftpb.Message{heartbeat(3, 4)})
	waitFor(t, "the sender told of a failed send", func() bool {
		return slices.Contains(againSide.lostPeers(), 4)
	})
}

// A message from another cluster, from a removed member, for another member, or whose raft
// message names other ends than its envelope is refused.
func TestCheck(t *testing.T) {
	removed := membership.NewCluster(7, nil)
	removed.Removed = membership.NewIDSet(1)
	tr := New(Config{LocalID: 2, ClusterID: 7})
	tr.Attach(&member{cluster: removed})
	env := func(cluster, from, to uint64, m *raftpb.Message) *pb.Envelope {
		return &pb.Envelope{ClusterId: cluster, From: from, To: to, Message: m}
	}
	for _, tt := range []struct {
		env  *pb.Envelope
		want error
	}{
		{env(7, 3, 2, heartbeat(3, 2)), nil},
		{env(8, 3, 2, heartbeat(3, 2)), ErrClusterIDMismatch},
		{env(7, 1, 2, heartbeat(1, 2)), membership.ErrIDRemoved},
		{env(7, 3, 4, heartbeat(3, 4)), errWrongMember},
		{env(7, 3, 2, heartbeat(4, 2)), errWrongMember},
		{env(7, 3, 2, heartbeat(3, 5)), errWrongMember},
		{env(7, 3, 2, nil), errWrongMember},
	} {
		if err := tr.check(tt.env); err != tt.want {
			t.Errorf("%v: got %v, want %v", tt.env, err, tt.want)
		}
	}
}

// A sender refused as removed is only told to ask the cluster (RemovalClaims): the refusing
// peer may be stale or forced into a new cluster. Its message never reaches raft.
func TestRemovedSenderIsToldToCheck(t *testing.T) {
	removed := membership.NewCluster(7, nil)
	removed.Removed = membership.NewIDSet(1)
	_, receiver, url := serve(t, 2, 7, removed)
	sender, _, _ := serve(t, 1, 7, membership.NewCluster(7, nil))
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))
	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	select {
	case <-sender.RemovalClaims():
	case <-time.After(5 * time.Second):
		t.Fatal("a sender refused as removed must be told to check")
	}
	if receiver.count() != 0 {
		t.Fatal("a refused message must not reach raft")
	}
}

// A member removed from the membership is no longer sent to, and its series go: what raft
// queued for it is dropped (it learns of its removal from the entry, a refusal or the Removed
// notice, confirmed with the cluster).
func TestRemovedPeerRetired(t *testing.T) {
	c := membership.NewCluster(7, nil)
	_, receiver, url := serve(t, 2, 7, c)
	m := metrics.New(metrics.Options{NoProcessCollector: true})
	sender, _, _ := serveWithMetrics(t, 1, 7, c, m)
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))
	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	waitFor(t, "the stream up", func() bool { return receiver.count() == 1 })
	gone := membership.NewCluster(7, nil)
	gone.Removed = membership.NewIDSet(2)
	sender.SetPeers(gone)
	if got := series(t, m, "etcd_network_peer_sent_bytes_total", membership.ID(2).String()); got != -1 {
		t.Errorf("a removed peer's sent bytes are exposed again (%v)", got)
	}
	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	if got := series(t, m, "etcd_network_peer_sent_bytes_total", membership.ID(2).String()); got != -1 {
		t.Errorf("a message to a removed peer made its series again (%v)", got)
	}
}

// A Removed notice, whoever sends it, is a claim to check and nothing more; one for another
// cluster or member is refused and not even that.
func TestRemovedNoticeIsAClaim(t *testing.T) {
	tr, receiver, url := serve(t, 2, 7, membership.NewCluster(7, nil))
	conn, err := Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, n := range []*pb.Notice{{ClusterId: 8, From: 1, To: 2}, {ClusterId: 7, From: 1, To: 3}} {
		if err := invoke(conn, pb.PeerClient.Removed, n); err == nil {
			t.Fatalf("%v: accepted", n)
		}
	}
	select {
	case <-tr.RemovalClaims():
		t.Fatal("a notice for another cluster or member made a claim")
	default:
	}
	if err := invoke(conn, pb.PeerClient.Removed, &pb.Notice{ClusterId: 7, From: 0xdeadbeef, To: 2}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.RemovalClaims():
	default:
		t.Fatal("a Removed notice made no claim")
	}
	if receiver.count() != 0 {
		t.Fatal("a notice reached raft")
	}
}

// A starting member's greeting wakes its peers' senders to it; no message of the greeting's
// reaches raft. It goes over the connection the sender's raft messages then take: one
// connection per sender.
func TestGreet(t *testing.T) {
	c := membership.NewCluster(7, []*membership.Member{{ID: 1, PeerURLs: []string{"http://127.0.0.1:1"}}})
	c.Removed = membership.NewIDSet(3)
	_, receiver, url := serve(t, 2, 7, c)
	peers := membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}})
	var sender *Transport
	for _, from := range []membership.ID{3, 1} {
		sender, _, _ = serve(t, from, 7, membership.NewCluster(7, nil))
		sender.SetPeers(peers)
		sender.Greet()
	}
	waitFor(t, "greetings", func() bool { return receiver.accepted.Load() == 2 })
	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	waitFor(t, "heartbeat", func() bool { return receiver.count() == 1 })
	if n := receiver.accepted.Load(); n != 2 {
		t.Fatalf("the receiver accepted %d connections from the two senders; want 2: a raft message goes over the greeting's connection", n)
	}
	// A greeting in the name of removed member 3 is refused as its raft messages are.
	conn, err := sender.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := invoke(conn, pb.PeerClient.Hello, &pb.Notice{ClusterId: 7, From: 3, To: 2}); !errors.Is(rpcerr.FromStatus(err), membership.ErrIDRemoved) {
		t.Fatalf("a greeting from a removed member: %v, want %v", err, membership.ErrIDRemoved)
	}
}

// A removed peer that cannot be reached costs its stopping sender one try at most, not one a
// queued message. The port refuses, so a try fails at once.
func TestRemovedUnreachablePeerIsTriedOnce(t *testing.T) {
	url := refusedURL(t)
	tr := New(Config{LocalID: 1, ClusterID: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tr.Attach(&member{cluster: membership.NewCluster(7, nil)})
	const queued = 16
	for range 32 {
		p := newPeer(tr, 2, []string{url})
		for range queued {
			p.enqueue(heartbeat(1, 2))
		}
		p.retire()
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.run()
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the sender of a removed, unreachable peer still runs 20s after the removal")
		}
		if taken := queued - len(p.q); taken > 1 {
			t.Fatalf("the sender took %d of the %d messages queued for a removed, unreachable peer; want 1 at most", taken, queued)
		}
	}
}

// A peer of an older build does not know this version's peer service: the sender says so in one
// line, once, and not as a generic failure.
func TestOlderPeerProtocolIsSaid(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer() // no clusterd.v2 service: every call answers Unimplemented
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	logs := &logtest.Recorder{}
	sender := New(Config{LocalID: 1, ClusterID: 7, Logger: slog.New(logs)})
	sender.Attach(&member{cluster: membership.NewCluster(7, nil)})
	t.Cleanup(sender.Close)
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{"http://" + l.Addr().String()}}}))
	for i := 0; i < 3; i++ {
		sender.Send([]*raftpb.Message{heartbeat(1, 2)})
		waitFor(t, "the older-protocol line", func() bool { return logs.Count("peer 0000000000000002 speaks an older peer protocol") == 1 })
	}
	if n := logs.Count("cannot send to peer"); n != 0 {
		t.Fatalf("an older peer logged as a generic failure %d times", n)
	}
}

// A member whose membership does not list the sender yet (it has not applied the sender's
// addition) answers it at the peer URLs the sender's stream names; the membership takes the peer
// over once it lists the sender, and its removal closes it.
func TestAnswersASenderItDoesNotKnowYet(t *testing.T) {
	self := membership.NewCluster(7, nil)
	sender, senderMember, senderURL := serve(t, 1, 7, self)
	self.Members[1] = &membership.Member{ID: 1, PeerURLs: []string{senderURL}}
	receiver, receiverMember, receiverURL := serve(t, 2, 7, membership.NewCluster(7, nil))
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{receiverURL}}}))

	sender.Send([]*raftpb.Message{heartbeat(1, 2)})
	waitFor(t, "delivery to the receiver", func() bool { return receiverMember.count() == 1 })
	receiver.Send([]*raftpb.Message{heartbeat(2, 1)})
	waitFor(t, "the answer to the sender", func() bool { return senderMember.count() == 1 })

	peer := func() *peer {
		receiver.mu.Lock()
		defer receiver.mu.Unlock()
		return receiver.peers[1]
	}
	if p := peer(); p == nil || !p.remote {
		t.Fatalf("the sender is not a remote of the receiver: %+v", p)
	}
	receiver.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 1, PeerURLs: []string{senderURL}}}))
	if p := peer(); p == nil || p.remote {
		t.Fatalf("the membership did not take the remote over: %+v", p)
	}
	gone := membership.NewCluster(7, nil)
	gone.Removed = membership.NewIDSet(1)
	receiver.SetPeers(gone)
	if p := peer(); p != nil {
		t.Fatal("the removed sender still has a peer")
	}
}

// A sender the membership does not list that names only a unix socket is not dialed back: its
// messages are taken (a plain peer network, as etcd's), but no peer is opened at the path.
func TestStrangerSocketIsNotDialed(t *testing.T) {
	receiver, member, url := serve(t, 2, 7, membership.NewCluster(7, nil))
	conn, err := Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	envs := []*peerspeak.Envelope{{ClusterID: 7, From: 5, To: 2, Message: heartbeat(5, 2)}}
	if err := peerspeak.SendRaft(context.Background(), conn, []string{"unix:///var/run/docker.sock"}, envs); err != nil {
		t.Fatal(err)
	}
	if member.count() != 1 {
		t.Fatalf("stepped %d messages, want 1", member.count())
	}
	receiver.mu.Lock()
	defer receiver.mu.Unlock()
	if p := receiver.peers[5]; p != nil {
		t.Fatal("a peer was opened for the stranger at the socket it named")
	}
}
