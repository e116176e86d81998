package raftnode

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// startLeader runs the only member of a new cluster, and returns it once it leads.
func startLeader(t *testing.T) (*Node, *recorder) {
	t.Helper()
	n, tr := startFirst(t, []datadir.Initial{{Name: "a", URLs: []string{"http://127.0.0.1:1"}}}, 10*time.Millisecond)
	waitUntil(t, "the member leads", func() bool { return n.Leader() == n.ID() })
	return n, tr
}

// startFirst runs the first of the initial members of a new cluster (named "a"), raft's clock
// ticking every tick; the test plays the others, if any.
func startFirst(t *testing.T, initial []datadir.Initial, tick time.Duration) (*Node, *recorder) {
	t.Helper()
	store, err := datadir.Create(filepath.Join(t.TempDir(), "a"), "a", datadir.NewCluster(initial, "test"))
	if err != nil {
		t.Fatal(err)
	}
	return runTicking(t, store, 10, tick)
}

// leaderAddedLearner runs the only member of a new cluster, has it add member 2 as a learner,
// and returns it with its transport, a context for the test's calls and its term.
func leaderAddedLearner(t *testing.T) (*Node, *recorder, context.Context, uint64) {
	t.Helper()
	n, tr := startLeader(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	term, err := n.LeaderTerm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addLearner(ctx, t, n, term, learnerID, "http://127.0.0.1:2")
	return n, tr, ctx, term
}

// addLearner has leader n, of term, add member id at url as a learner.
func addLearner(ctx context.Context, t *testing.T, n *Node, term uint64, id membership.ID, url string) {
	t.Helper()
	ch := membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: id, PeerURLs: []string{url}, IsLearner: true}}
	if _, err := n.Propose(ctx, term, ch); err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Liveness is raft's own traffic of the current term from a member: a message of a past term
// (a stale or forged one, which raft ignores), a message from a sender the membership does not
// list, and a message that is not raft's exchange with the leader never count.
func TestHeardWithin(t *testing.T) {
	n, _, ctx, term := leaderAddedLearner(t)
	msg := func(typ raftpb.MessageType, from, term uint64) *raftpb.Message {
		return &raftpb.Message{Type: typ.Enum(), From: proto.Uint64(from), To: proto.Uint64(uint64(n.ID())), Term: proto.Uint64(term)}
	}
	for _, m := range []*raftpb.Message{
		msg(raftpb.MessageType_MsgHeartbeatResp, uint64(learnerID), term-1),
		msg(raftpb.MessageType_MsgHeartbeatResp, 0xdeadbeef, term),
		msg(raftpb.MessageType_MsgReadIndex, uint64(learnerID), term),
	} {
		_ = n.Step(ctx, m)
	}
	if n.HeardWithin(learnerID, time.Minute) || n.HeardWithin(0xdeadbeef, time.Minute) {
		t.Fatal("heard from a past term's message, a stranger's, or a message outside the leader's exchange")
	}
	if err := n.Step(ctx, msg(raftpb.MessageType_MsgHeartbeatResp, uint64(learnerID), term)); err != nil {
		t.Fatal(err)
	}
	if !n.HeardWithin(learnerID, time.Minute) {
		t.Fatal("the learner's heartbeat answer of the current term was not heard")
	}
}

// A member whose log holds, unapplied, the entry that removes it (it acknowledged its removal)
// says so; one that applied nothing of the kind, or whose removal entry is stale, does not.
func TestHoldsOwnRemoval(t *testing.T) {
	n, _ := startLearner(t)
	if n.HoldsOwnRemoval() {
		t.Fatal("a fresh learner holds its removal")
	}
	removal, err := removalEntry(learnerID, snapIndex+1, 3, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// Appended, not committed: the commit stays at the snapshot.
	step(t, n, &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(uint64(leaderID)), To: proto.Uint64(uint64(learnerID)),
		Term: proto.Uint64(3), LogTerm: proto.Uint64(2), Index: proto.Uint64(snapIndex), Commit: proto.Uint64(snapIndex),
		Entries: []*raftpb.Entry{removal}})
	waitUntil(t, "the removal held", n.HoldsOwnRemoval)
}
