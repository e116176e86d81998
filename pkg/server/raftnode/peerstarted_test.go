package raftnode

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// to returns the messages sent to id so far.
func (r *recorder) to(id membership.ID) []*raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*raftpb.Message
	for _, m := range r.sent {
		if m.GetTo() == uint64(id) {
			out = append(out, m)
		}
	}
	return out
}

// startLeader runs the only member of a new cluster, and returns it once it leads.
func startLeader(t *testing.T) (*Node, *recorder) {
	t.Helper()
	initial := []datadir.Initial{{Name: "a", URLs: []string{"http://127.0.0.1:1"}}}
	store, err := datadir.Create(filepath.Join(t.TempDir(), "a"), "a", datadir.NewCluster(initial, "test"))
	if err != nil {
		t.Fatal(err)
	}
	n, tr := run(t, store, 10)
	waitUntil(t, "the member leads", func() bool { return n.Leader() == n.ID() })
	return n, tr
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

// A leader told that a learner it could not reach has started with an empty log (it has just
// joined) sends it what it lacks at once, instead of probing again where it guessed the
// learner's log ends and waiting for the rejection; told that the learner started with a log, it
// probes again, as before.
func TestPeerStartedWithAnEmptyLog(t *testing.T) {
	for _, emptyLog := range []bool{true, false} {
		t.Run(fmt.Sprintf("emptyLog=%v", emptyLog), func(t *testing.T) {
			n, tr := startLeader(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			term, err := n.LeaderTerm(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ch := membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: learnerID, PeerURLs: []string{"http://127.0.0.1:2"}, IsLearner: true}}
			if _, err := n.Propose(ctx, term, ch); err != nil {
				t.Fatal(err)
			}
			// raft probes the learner once and then waits for its answer.
			waitUntil(t, "the probe", func() bool { return len(tr.to(learnerID)) > 0 })
			probe := tr.to(learnerID)[0]
			if probe.GetType() != raftpb.MessageType_MsgApp || probe.GetIndex() == 0 {
				t.Fatalf("first message to the learner: %v at index %d; want a probe at the leader's last index", probe.GetType(), probe.GetIndex())
			}
			sent := len(tr.to(learnerID))
			n.PeerStarted(uint64(learnerID), emptyLog)
			waitUntil(t, "the next append", func() bool { return len(tr.to(learnerID)) > sent })
			next := tr.to(learnerID)[sent]
			// A new cluster's log starts after a snapshot of its first membership (datadir), so
			// what an empty log lacks first is that snapshot.
			if emptyLog && next.GetType() != raftpb.MessageType_MsgSnap {
				t.Fatalf("after PeerStarted: %v at index %d; want the snapshot", next.GetType(), next.GetIndex())
			}
			if !emptyLog && (next.GetType() != raftpb.MessageType_MsgApp || next.GetIndex() != probe.GetIndex()) {
				t.Fatalf("after PeerStarted: %v at index %d; want the probe at index %d again", next.GetType(), next.GetIndex(), probe.GetIndex())
			}
		})
	}
}
