package raftnode

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A leader sends a member that needs a snapshot one of the membership as applied then, in place
// of the stored one raft chose, whose message keeps it; once the membership moves, a new one.
func TestSnapshotSentIsTheAppliedMembership(t *testing.T) {
	n, tr, ctx, term := leaderAddedLearner(t)
	sendSnap := func() *raftpb.Snapshot {
		t.Helper()
		stored := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1)}}
		m := &raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), From: proto.Uint64(uint64(n.ID())), To: proto.Uint64(uint64(learnerID)),
			Term: proto.Uint64(term), Snapshot: stored}
		if err := n.send([]*raftpb.Message{m}); err != nil {
			t.Fatal(err)
		}
		if m.Snapshot != stored {
			t.Error("the message raft made lost its stored snapshot")
		}
		sent := lastSnapTo(t, tr, learnerID)
		if sent.GetTerm() != term || sent.GetSnapshot() == stored {
			t.Fatalf("sent %v, want a snapshot of the applied membership to %s in term %d", sent, learnerID, term)
		}
		return sent.GetSnapshot()
	}

	applied := n.applied.Load()
	first := sendSnap()
	if got := first.GetMetadata().GetIndex(); got != applied {
		t.Fatalf("snapshot at index %d, want the applied index %d", got, applied)
	}
	c, err := storage.SnapshotCluster(first)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Member(learnerID); m == nil || !m.IsLearner {
		t.Fatalf("snapshot's membership has no learner %s: %v", learnerID, c.Members)
	}
	if got := storage.ConfState(c).GetLearners(); len(got) != 1 || got[0] != uint64(learnerID) {
		t.Fatalf("snapshot's learners = %v", got)
	}

	up := membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: learnerID, PeerURLs: []string{"http://127.0.0.1:3"}}}
	if _, err := n.Propose(ctx, term, up); err != nil {
		t.Fatal(err)
	}
	fresh := sendSnap()
	if fresh == first || fresh.GetMetadata().GetIndex() != n.applied.Load() {
		t.Fatalf("snapshot at index %d, want a new one at the applied index %d", fresh.GetMetadata().GetIndex(), n.applied.Load())
	}
	if c, err := storage.SnapshotCluster(fresh); err != nil || c.Member(learnerID).PeerURLs[0] != "http://127.0.0.1:3" {
		t.Fatalf("fresh snapshot: %v, %v", c, err)
	}
}

// A member that starts with nothing of the log greets the leader, which makes the snapshot the

// lastSnapTo is the last snapshot message tr was given for member to: the loop sends its own
// heartbeats and appends beside the test's messages.
func lastSnapTo(t *testing.T, tr *recorder, to membership.ID) *raftpb.Message {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i := len(tr.sent) - 1; i >= 0; i-- {
		if m := tr.sent[i]; m.GetType() == raftpb.MessageType_MsgSnap && m.GetTo() == uint64(to) {
			return m
		}
	}
	t.Fatalf("no snapshot sent to %s", to)
	return nil
}
