package raftnode

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A new member that greets the leader hears from it at once, not at the leader's next tick:
// raft sends nothing more to a member whose first append was not delivered until the member
// answers a heartbeat. Here raft's clock ticks once an hour, so the only heartbeat the learner
// can get is the one its greeting brings. Greetings within a quarter of the tick bring none.
func TestWelcomeContactsANewMemberAtOnce(t *testing.T) {
	initial := []datadir.Initial{{Name: "a", URLs: []string{"http://127.0.0.1:1"}}, {Name: "b", URLs: []string{"http://127.0.0.1:3"}}}
	n, tr := startFirst(t, initial, time.Hour)
	var peer membership.ID
	for _, id := range n.Cluster().Voters() {
		if id != n.ID() {
			peer = id
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	answered := make(chan struct{})
	go func() { defer close(answered); answerAs(ctx, n, tr, peer) }()
	defer func() { cancel(); <-answered }()
	if err := n.raft.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the member leads", func() bool { return n.Leader() == n.ID() })
	term, err := n.LeaderTerm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addLearner(ctx, t, n, term, learnerID, "http://127.0.0.1:2")
	waitUntil(t, "the first append to the learner", func() bool { return tr.count(raftpb.MessageType_MsgApp, learnerID) > 0 })
	before := tr.count(raftpb.MessageType_MsgHeartbeat, learnerID)
	n.Greeted(learnerID)
	waitUntil(t, "a heartbeat to the learner after its greeting", func() bool {
		return tr.count(raftpb.MessageType_MsgHeartbeat, learnerID) > before
	})
	after := tr.count(raftpb.MessageType_MsgHeartbeat, learnerID)

	// The learner greets again, then the peer. The loop takes a greeting only once it has
	// handled the one before, so once the peer's is taken, whatever the learner's asked of raft
	// has been asked; and raft sends in order, so a member added after that gets its first
	// append after any heartbeat the greeting brought.
	n.Greeted(learnerID)
	n.Greeted(peer)
	waitUntil(t, "the loop took the greetings", func() bool { return len(n.greeted) == 0 })
	const second = membership.ID(4)
	addLearner(ctx, t, n, term, second, "http://127.0.0.1:4")
	waitUntil(t, "the first append to the second learner", func() bool { return tr.count(raftpb.MessageType_MsgApp, second) > 0 })
	if got := tr.count(raftpb.MessageType_MsgHeartbeat, learnerID); got != after {
		t.Errorf("%d heartbeats to the learner after a greeting within a quarter of the tick, want %d", got, after)
	}
}

// count is how many messages of type typ the node sent to member to.
func (r *recorder) count(typ raftpb.MessageType, to membership.ID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for _, m := range r.sent {
		if m.GetType() == typ && m.GetTo() == uint64(to) {
			k++
		}
	}
	return k
}

// answerAs plays voter peer until ctx ends: it grants votes and acknowledges appends and
// heartbeats, as a member that is up and in sync does.
func answerAs(ctx context.Context, n *Node, tr *recorder, peer membership.ID) {
	seen := 0
	for ctx.Err() == nil {
		tr.mu.Lock()
		msgs := append([]*raftpb.Message(nil), tr.sent[seen:]...)
		seen = len(tr.sent)
		tr.mu.Unlock()
		for _, m := range msgs {
			if m.GetTo() != uint64(peer) {
				continue
			}
			resp := &raftpb.Message{From: proto.Uint64(uint64(peer)), To: proto.Uint64(m.GetFrom()), Term: proto.Uint64(m.GetTerm())}
			switch m.GetType() {
			case raftpb.MessageType_MsgPreVote:
				resp.Type = raftpb.MessageType_MsgPreVoteResp.Enum()
			case raftpb.MessageType_MsgVote:
				resp.Type = raftpb.MessageType_MsgVoteResp.Enum()
			case raftpb.MessageType_MsgApp:
				resp.Type = raftpb.MessageType_MsgAppResp.Enum()
				resp.Index = proto.Uint64(m.GetIndex() + uint64(len(m.GetEntries())))
			case raftpb.MessageType_MsgHeartbeat:
				resp.Type = raftpb.MessageType_MsgHeartbeatResp.Enum()
				resp.Context = m.GetContext()
			default:
				continue
			}
			_ = n.Step(ctx, resp)
		}
		time.Sleep(time.Millisecond)
	}
}
