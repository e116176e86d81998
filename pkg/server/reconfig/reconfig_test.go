package reconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// memNet carries raft messages between nodes of one process, in order per receiver. A rule may
// drop a message or hold it until release; rules are checked as each message is delivered.
type memNet struct {
	mu    sync.Mutex
	nodes map[uint64]*raftnode.Node
	inbox map[uint64]chan *raftpb.Message
	rule  func(m *raftpb.Message) verdict
	held  []*raftpb.Message
}

type verdict int

const (
	deliver verdict = iota
	drop
	hold
)

func (n *memNet) setRule(r func(m *raftpb.Message) verdict) {
	n.mu.Lock()
	n.rule = r
	n.mu.Unlock()
}

// release delivers what was held and lets everything through from now on.
func (n *memNet) release() {
	n.mu.Lock()
	held := n.held
	n.held, n.rule = nil, nil
	n.mu.Unlock()
	for _, m := range held {
		n.inbox[m.GetTo()] <- m
	}
}

// endpoint is one node's raftnode.Transport.
type endpoint struct{ net *memNet }

func (e endpoint) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		select {
		case e.net.inbox[m.GetTo()] <- m:
		default: // a full inbox is a lossy link, which raft copes with
		}
	}
}

func (e endpoint) SetPeers(*membership.Cluster) {}

func (n *memNet) run(ctx context.Context, id uint64) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-n.inbox[id]:
			n.mu.Lock()
			v := deliver
			if n.rule != nil {
				v = n.rule(m)
			}
			if v == hold {
				n.held = append(n.held, m)
			}
			node := n.nodes[id]
			n.mu.Unlock()
			if v == deliver {
				_ = node.Step(ctx, m)
			}
		}
	}
}

// startNodes runs a three-member cluster of raftnode.Nodes on a memNet, with a coordinator each.
// The member named slow, if any, has an election timeout of 10 s instead of 100 ms: cut off, it
// goes on believing it leads for that long.
func startNodes(t *testing.T, slow string) (*memNet, map[uint64]*Coordinator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// Free ports, which servePeers serves when a test asks: else nothing listens there.
	ports, err := freeport.Ports(3)
	if err != nil {
		t.Fatal(err)
	}
	var initial []datadir.Initial
	for i, name := range []string{"a", "b", "c"} {
		initial = append(initial, datadir.Initial{Name: name, URLs: []string{fmt.Sprintf("http://127.0.0.1:%d", ports[i])}})
	}
	c := datadir.NewCluster(initial, "test")
	net := &memNet{nodes: map[uint64]*raftnode.Node{}, inbox: map[uint64]chan *raftpb.Message{}}
	coords := map[uint64]*Coordinator{}
	var wg sync.WaitGroup
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, in := range initial {
		dir := filepath.Join(t.TempDir(), in.Name)
		store, err := datadir.Create(dir, in.Name, c)
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.Load()
		if err != nil {
			t.Fatal(err)
		}
		ticks := 10
		if in.Name == slow {
			ticks = 1000
		}
		node, err := raftnode.New(raftnode.Config{
			Store: store, State: st, Transport: endpoint{net}, TickInterval: 10 * time.Millisecond,
			ElectionTicks: ticks, SnapshotCount: 10000, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		id := uint64(st.MemberID)
		net.nodes[id], net.inbox[id] = node, make(chan *raftpb.Message, 4096)
		tr := transport.New(transport.Config{LocalID: st.MemberID, ClusterID: c.ID, Logger: logger})
		// Strict checks off: this transport never hears from anyone.
		coords[id] = New(Config{Node: node, Transport: tr, ElectionTimeout: 100 * time.Millisecond, MaxLearners: 1})
		t.Cleanup(func() { store.Close() })
	}
	// Only once every node is in the maps, which are read without the lock from then on.
	for id, node := range net.nodes {
		wg.Add(2)
		go func() { defer wg.Done(); _ = node.Run(ctx) }()
		go func() { defer wg.Done(); net.run(ctx, id) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return net, coords
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func do(coord *Coordinator, ch membership.Change, within time.Duration) (*Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return coord.Do(ctx, Request{Change: ch})
}

func waitLeader(t *testing.T, coords map[uint64]*Coordinator) uint64 {
	t.Helper()
	var lead uint64
	waitUntil(t, "a leader", func() bool {
		for id, c := range coords {
			if c.cfg.Node.Leader() == membership.ID(id) {
				lead = id
				return true
			}
		}
		return false
	})
	return lead
}

func learner(name string, port int) membership.Change {
	return membership.Change{Kind: membership.KindAdd, Member: membership.Member{
		ID: raftnode.NewMemberID(), Name: name, PeerURLs: []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, IsLearner: true,
	}}
}

// proposeAsync proposes ch on node in the background; the channel gets Propose's error.
func proposeAsync(node *raftnode.Node, term uint64, ch membership.Change) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := node.Propose(ctx, term, ch)
		done <- err
	}()
	return done
}

func isConfChange(m *raftpb.Message) bool {
	for _, e := range m.GetEntries() {
		if e.GetType() == raftpb.EntryType_EntryConfChange {
			return true
		}
	}
	return false
}

// A new leader checks a change only against a membership that holds everything committed
// before its term. Here the removal of the only learner is committed by the old leader with
// one follower, which has it in its log but has not learnt that it is committed when it
// becomes leader; a learner add sent to it then must not be refused as one learner too many
// (the chaos test found that: the check ran against the membership before the removal).
func TestNewLeaderChecksAfterEarlierTerms(t *testing.T) {
	net, coords := startNodes(t, "")
	lead := waitLeader(t, coords)
	var next, last uint64 // the follower that will lead next, and the other one
	for id := range coords {
		switch {
		case id == lead:
		case next == 0:
			next = id
		default:
			last = id
		}
	}
	reply, err := do(coords[lead], learner("x", 9), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	x := reply.Member.ID
	for id, c := range coords {
		waitUntil(t, fmt.Sprintf("%x applies the add", id), func() bool { return c.cfg.Node.Cluster().Member(x) != nil })
	}

	// The removal reaches next and nobody else; after it, next hears nothing more from the
	// leader, so it never learns that the removal committed.
	cutLead := false
	net.setRule(func(m *raftpb.Message) verdict {
		switch {
		case m.GetFrom() != lead:
			return deliver
		case m.GetTo() == next && cutLead:
			return drop
		case m.GetTo() == next && isConfChange(m):
			cutLead = true
			return deliver
		case m.GetTo() == last && m.GetType() == raftpb.MessageType_MsgApp:
			return hold
		}
		return deliver
	})
	if _, err := do(coords[lead], membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: x}}, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// The old leader goes silent; next wins the election (its log is longer than last's), but
	// what it sends last is held, so it cannot commit anything of its own term.
	net.setRule(func(m *raftpb.Message) verdict {
		switch {
		case m.GetFrom() == lead || m.GetTo() == lead:
			return drop
		case m.GetFrom() == next && m.GetType() == raftpb.MessageType_MsgApp:
			return hold
		}
		return deliver
	})
	nextNode := coords[next].cfg.Node
	waitUntil(t, "the follower with the removal leads", func() bool { return nextNode.Leader() == membership.ID(next) })
	if nextNode.Cluster().Member(x) == nil {
		t.Fatal("the new leader applied the removal already: the test did not set up what it means to")
	}
	_, err = do(coords[next], learner("y", 10), 300*time.Millisecond)
	if errors.Is(err, membership.ErrTooManyLearners) {
		t.Fatalf("the new leader checked against a membership without the committed removal: %v", err)
	}
	if err == nil {
		t.Fatal("the new leader made a change before committing an entry of its term")
	}

	net.release()
	reply, err = do(coords[next], learner("y", 10), 5*time.Second)
	if err != nil {
		t.Fatalf("once the new leader committed, the add must pass: %v", err)
	}
	if reply.Cluster.Member(x) != nil || len(reply.Cluster.Learners()) != 1 {
		t.Fatalf("after the add: %v", reply.Cluster.Members)
	}
}

// A conf change that raft turns into an empty entry (another one is still pending) is reported
// to its proposer as lost, as soon as the empty entry is applied, and is not applied itself; the
// coordinator never proposes like this (it waits in LeaderTerm), so the test goes to the node.
func TestEmptiedConfChangeIsLost(t *testing.T) {
	net, coords := startNodes(t, "")
	lead := waitLeader(t, coords)
	node := coords[lead].cfg.Node
	term, err := node.LeaderTerm(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing the leader appends reaches a follower until release: both changes stay pending.
	net.setRule(func(m *raftpb.Message) verdict {
		if m.GetFrom() == lead && m.GetType() == raftpb.MessageType_MsgApp {
			return hold
		}
		return deliver
	})
	first, second := learner("x", 9), learner("y", 10)
	firstDone := proposeAsync(node, term, first)
	waitUntil(t, "the first change in the leader's log", func() bool {
		net.mu.Lock()
		defer net.mu.Unlock()
		for _, m := range net.held {
			if isConfChange(m) {
				return true
			}
		}
		return false
	})
	secondDone := proposeAsync(node, term, second)
	// The second proposal has reached raft once an entry after the first is held: raft appends
	// it, emptied, right away.
	waitUntil(t, "the second proposal appended", func() bool {
		net.mu.Lock()
		defer net.mu.Unlock()
		var last uint64
		for _, m := range net.held {
			for _, e := range m.GetEntries() {
				last = max(last, e.GetIndex())
			}
		}
		return last > node.Applied()+1
	})
	net.release()
	if err := <-firstDone; err != nil {
		t.Fatalf("the first change: %v", err)
	}
	if err := <-secondDone; !errors.Is(err, raftnode.ErrProposalLost) {
		t.Fatalf("the emptied change: %v, want %v", err, raftnode.ErrProposalLost)
	}
	c := node.Cluster()
	if c.Member(first.Member.ID) == nil || c.Member(second.Member.ID) != nil {
		t.Fatalf("after both: first applied %v, second applied %v; want true, false",
			c.Member(first.Member.ID) != nil, c.Member(second.Member.ID) != nil)
	}
}

// A leader cut off from its cluster believes it leads until its election timeout. It must not
// refuse a change on a membership the cluster has moved past: here a newer leader removed the
// member whose URL an add then asks for, and the cut-off leader still has that member.
func TestCutOffLeaderDoesNotRefuseOnStaleMembership(t *testing.T) {
	net, coords := startNodes(t, "a")
	var slow uint64
	for id, c := range coords {
		if c.cfg.Node.Cluster().Members[c.cfg.Node.ID()].Name == "a" {
			slow = id
		}
	}
	lead := waitLeader(t, coords)
	if lead != slow {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := coords[lead].cfg.Node.TransferLeadership(ctx, membership.ID(slow))
		cancel()
		if err != nil {
			t.Fatalf("handing leadership to the slow member: %v", err)
		}
	}
	x := learner("x", 9)
	reply, err := do(coords[slow], x, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	xID := reply.Member.ID
	for id, c := range coords {
		waitUntil(t, fmt.Sprintf("%x applies the add", id), func() bool { return c.cfg.Node.Cluster().Member(xID) != nil })
	}

	// Cut the leader off; the other two elect a leader of their own and remove x.
	net.setRule(func(m *raftpb.Message) verdict {
		if m.GetFrom() == slow || m.GetTo() == slow {
			return drop
		}
		return deliver
	})
	var next uint64
	waitUntil(t, "a leader among the other two", func() bool {
		for id, c := range coords {
			if id != slow && c.cfg.Node.Leader() == membership.ID(id) {
				next = id
				return true
			}
		}
		return false
	})
	if _, err := do(coords[next], membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: xID}}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if coords[slow].cfg.Node.Leader() != membership.ID(slow) || coords[slow].cfg.Node.Cluster().Member(xID) == nil {
		t.Fatal("the cut-off member must still lead, with x in its membership: the test did not set up what it means to")
	}
	_, err = do(coords[slow], learner("y", 9), 500*time.Millisecond)
	if errors.Is(err, membership.ErrPeerURLExists) {
		t.Fatalf("the cut-off leader refused on a membership the cluster has moved past: %v", err)
	}
	if err == nil {
		t.Fatal("the cut-off leader made a change without its cluster")
	}
}

// newLeaderUnheard publishes every member, so that the strict check counts each as started,
// then hands leadership from the leader to another member while whatever the third sends that
// member goes by rule (hold or drop): the new leader, elected by the old one, has not heard from
// the third. It returns the old leader, the new one and the third.
func newLeaderUnheard(t *testing.T, net *memNet, coords map[uint64]*Coordinator, rule verdict) (old, lead, unheard uint64) {
	t.Helper()
	old = waitLeader(t, coords)
	for id, c := range coords {
		c.cfg.StrictReconfig, c.cfg.ElectionTimeout = true, 500*time.Millisecond
		self := c.cfg.Node.Cluster().Member(membership.ID(id))
		publish := membership.Change{Kind: membership.KindPublish, Member: membership.Member{
			ID: self.ID, Name: self.Name, ClientURLs: []string{fmt.Sprintf("http://127.0.0.1:%d", 100+len(self.Name))},
		}}
		// Through the leader: this harness forwards nothing between coordinators.
		if _, err := do(coords[old], publish, 5*time.Second); err != nil {
			t.Fatalf("publishing %s: %v", self.Name, err)
		}
		switch {
		case id == old:
		case lead == 0:
			lead = id
		default:
			unheard = id
		}
	}
	for _, c := range coords {
		waitUntil(t, "every member applies every publish", func() bool {
			for _, m := range c.cfg.Node.Cluster().Members {
				if !m.Started {
					return false
				}
			}
			return true
		})
	}
	net.setRule(func(m *raftpb.Message) verdict {
		if m.GetFrom() == unheard && m.GetTo() == lead {
			return rule
		}
		return deliver
	})
	// A follower hears from another follower only when it answers a campaign (at the start).
	unheardFor := func() bool {
		return !coords[lead].cfg.Node.HeardWithin(membership.ID(unheard), coords[lead].cfg.ElectionTimeout)
	}
	waitUntil(t, "the campaigns of the start are an election timeout old", unheardFor)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := coords[old].cfg.Node.TransferLeadership(ctx, membership.ID(lead)); err != nil {
		t.Fatalf("handing leadership over: %v", err)
	}
	if _, err := coords[lead].cfg.Node.LeaderTerm(ctx); err != nil {
		t.Fatalf("the new leader commits an entry of its term: %v", err)
	}
	if !unheardFor() {
		t.Fatal("the new leader heard from the member it must not have: the test did not set up what it means to")
	}
	return old, lead, unheard
}

// A leader elected a moment ago has not heard yet from every voter that is up. The first change
// it judges, the removal of the old leader, leaves two voters, both needed: it is not refused
// as "unhealthy cluster" because the other voter's first acknowledgement came after the check.
func TestNewLeaderWaitsToHearVotersBeforeRefusing(t *testing.T) {
	net, coords := startNodes(t, "")
	old, lead, unheard := newLeaderUnheard(t, net, coords, hold)
	done := make(chan error, 1)
	go func() {
		_, err := do(coords[lead], membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(old)}}, 10*time.Second)
		done <- err
	}()
	// Let the unheard member through once the leader has sent it a few heartbeats more: the
	// removal has been judged once by then, in all likelihood, and refused on the spot before.
	beats := 0
	net.setRule(func(m *raftpb.Message) verdict {
		switch {
		case m.GetFrom() == lead && m.GetTo() == unheard && m.GetType() == raftpb.MessageType_MsgHeartbeat:
			beats++
		case m.GetFrom() == unheard && m.GetTo() == lead && beats < 3:
			return hold
		}
		return deliver
	})
	waitUntil(t, "heartbeats to the unheard member", func() bool {
		net.mu.Lock()
		defer net.mu.Unlock()
		return beats >= 3
	})
	net.release()
	if err := <-done; err != nil {
		t.Fatalf("removing the old leader once the other voter answers: %v", err)
	}
	if coords[lead].cfg.Node.Cluster().Member(membership.ID(old)) != nil {
		t.Fatal("the old leader is still a member")
	}
}

// The wait is bounded: a voter that does not answer the new leader within an election timeout
// of its election is not connected, and the change is refused then.
func TestNewLeaderRefusesWhenAVoterStaysSilent(t *testing.T) {
	net, coords := startNodes(t, "")
	old, lead, _ := newLeaderUnheard(t, net, coords, drop)
	_, err := do(coords[lead], membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(old)}}, 10*time.Second)
	if !errors.Is(err, membership.ErrUnhealthy) {
		t.Fatalf("removing the old leader with the other voter silent: %v, want %v", err, membership.ErrUnhealthy)
	}
	if coords[lead].cfg.Node.Cluster().Member(membership.ID(old)) == nil {
		t.Fatal("the refused removal was applied")
	}
}

// Only a change of the voters waits for fresh liveness: a learner's add, removal or update, and a
// publish, leave the quorum as it is.
func TestChangesVoters(t *testing.T) {
	cl := membership.NewCluster(7, []*membership.Member{
		{ID: 1, PeerURLs: []string{"http://127.0.0.1:1"}},
		{ID: 2, PeerURLs: []string{"http://127.0.0.1:2"}, IsLearner: true},
	})
	for _, tc := range []struct {
		ch   membership.Change
		want bool
	}{
		{membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: 3}}, true},
		{membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: 3, IsLearner: true}}, false},
		{membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 1}}, true},
		{membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 2}}, false},
		{membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 1}}, true},
		{membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 2}}, false},
		{membership.Change{Kind: membership.KindPromote, Member: membership.Member{ID: 2}}, true},
		{membership.Change{Kind: membership.KindPublish, Member: membership.Member{ID: 1}}, false},
	} {
		if got := changesVoters(cl, tc.ch); got != tc.want {
			t.Errorf("%v of %s: %v, want %v", tc.ch.Kind, tc.ch.Member.ID, got, tc.want)
		}
	}
}
