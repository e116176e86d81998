package raftnode

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// gate is a transport that keeps what the node sends and, once closed, holds the loop in its
// next Send until opened.
type gate struct {
	recorder
	mu     sync.Mutex
	closed chan struct{} // opened by closing it; nil while the gate is open
	held   chan struct{} // signalled when a Send is held
}

func (g *gate) Send(msgs []*raftpb.Message) {
	// Whether to hold is read first: a test that closes the gate after it saw msgs holds the
	// next Send, never this one.
	g.mu.Lock()
	wait := g.closed
	g.mu.Unlock()
	g.recorder.Send(msgs)
	if wait != nil {
		g.held <- struct{}{}
		<-wait
	}
}

func (g *gate) close() { g.mu.Lock(); g.closed = make(chan struct{}); g.mu.Unlock() }

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.closed)
	g.closed = nil
}

// sentOf reports whether a message of type typ was sent, and when want is given, one for which
// it holds.
func (g *gate) sentOf(typ raftpb.MessageType, want func(*raftpb.Message) bool) bool {
	g.recorder.mu.Lock()
	defer g.recorder.mu.Unlock()
	for _, m := range g.sent {
		if m.GetType() == typ && (want == nil || want(m)) {
			return true
		}
	}
	return false
}

// The window design.md names: a leader whose raft committed an entry that its loop has not
// recorded yet. An append rewriting that entry, forged in the other voter's name, passes the
// check (which knows only the loop's commit) and reaches raft, which is harmless: a leader
// ignores an append of its own term (stepLeader), and one of a later term makes it a follower
// whose handleAppendEntries answers an append after an index below its commit with that commit
// and appends nothing. The entry stays as committed, and is applied.
func TestForgedAppendInLeaderWindow(t *testing.T) {
	g := &gate{held: make(chan struct{})}
	n := runOn(t, pairStore(t, leaderID, false, 2), g, 50, 10*time.Millisecond)
	other := uint64(learnerID) // a voter here
	resp := func(typ raftpb.MessageType, term, index uint64) *raftpb.Message {
		m := msg(typ, membership.ID(other), leaderID, term)
		m.Index = proto.Uint64(index)
		return m
	}
	waitUntil(t, "a pre-vote request", func() bool { return g.sentOf(raftpb.MessageType_MsgPreVote, nil) })
	step(t, n, resp(raftpb.MessageType_MsgPreVoteResp, 3, 0))
	waitUntil(t, "a vote request", func() bool { return g.sentOf(raftpb.MessageType_MsgVote, nil) })
	step(t, n, resp(raftpb.MessageType_MsgVoteResp, 3, 0))
	waitUntil(t, "the member leads", func() bool { return n.Leader() == leaderID })
	step(t, n, resp(raftpb.MessageType_MsgAppResp, 3, snapIndex+1)) // the leader's empty entry
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := n.LeaderTerm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proposed := make(chan error, 1)
	go func() {
		_, err := n.Propose(ctx, term, membership.Change{Kind: membership.KindAdd,
			Member: membership.Member{ID: 3, PeerURLs: []string{"http://127.0.0.1:3"}, IsLearner: true}})
		proposed <- err
	}()
	at12 := func(m *raftpb.Message) bool {
		return len(m.GetEntries()) > 0 && m.GetEntries()[len(m.GetEntries())-1].GetIndex() == snapIndex+2
	}
	waitUntil(t, "the append of entry 12", func() bool { return g.sentOf(raftpb.MessageType_MsgApp, at12) })
	// The next Send (the next tick's heartbeat) holds the loop before it records anything more.
	g.close()
	<-g.held
	step(t, n, resp(raftpb.MessageType_MsgAppResp, 3, snapIndex+2))
	waitUntil(t, "raft's commit of entry 12", func() bool { return n.raft.Status().GetCommit() == snapIndex+2 })
	if c := n.commit.Load(); c != snapIndex+1 {
		t.Fatalf("the loop recorded commit %d: not the window", c)
	}
	forged := func(term, logTerm uint64) *raftpb.Message {
		m := msg(raftpb.MessageType_MsgApp, membership.ID(other), leaderID, term)
		m.Index, m.LogTerm, m.Commit = proto.Uint64(snapIndex+1), proto.Uint64(3), proto.Uint64(snapIndex+2)
		m.Entries = []*raftpb.Entry{{Type: raftpb.EntryType_EntryNormal.Enum(), Index: proto.Uint64(snapIndex + 2), Term: proto.Uint64(logTerm)}}
		return m
	}
	step(t, n, forged(3, 3)) // of the leader's term
	step(t, n, forged(4, 4)) // of a later term, conflicting with the committed entry
	g.open()
	if err := <-proposed; err != nil {
		t.Fatalf("the proposal committed before the forged appends: %v", err)
	}
	if got, err := n.mem.Term(snapIndex + 2); err != nil || got != 3 {
		t.Fatalf("entry 12 has term %d (%v), want 3", got, err)
	}
	if n.Cluster().Member(3) == nil {
		t.Fatal("the committed change is not applied")
	}
	waitUntil(t, "the term of the forged append", func() bool { return n.Term() == 4 })
}
