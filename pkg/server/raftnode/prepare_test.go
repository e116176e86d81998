package raftnode

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A leader that applies an added member makes the snapshot that member will ask for ahead of
// it, of the membership as applied then, and sends that one; the message raft made keeps its
// stored snapshot, which carries no data.
func TestSnapshotPreparedForAddedMember(t *testing.T) {
	n, tr, ctx, term := leaderAddedLearner(t)
	applied := n.applied.Load()
	waitUntil(t, "the snapshot prepared", func() bool { return n.prepared.Load().GetMetadata().GetIndex() == applied })
	prepared := n.prepared.Load()
	c, err := storage.SnapshotCluster(prepared)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Member(learnerID); m == nil || !m.IsLearner {
		t.Fatalf("prepared snapshot's membership has no learner %s: %v", learnerID, c.Members)
	}
	if got := storage.ConfState(c).GetLearners(); len(got) != 1 || got[0] != uint64(learnerID) {
		t.Fatalf("prepared snapshot's learners = %v", got)
	}

	stored := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1)}}
	m := &raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), From: proto.Uint64(uint64(n.ID())), To: proto.Uint64(uint64(learnerID)),
		Term: proto.Uint64(term), Snapshot: stored}
	if err := n.send([]*raftpb.Message{m}); err != nil {
		t.Fatal(err)
	}
	if m.Snapshot != stored {
		t.Error("the message raft made lost its stored snapshot")
	}
	tr.mu.Lock()
	sent := tr.sent[len(tr.sent)-1]
	tr.mu.Unlock()
	if sent.GetSnapshot() != prepared || sent.GetTo() != uint64(learnerID) || sent.GetTerm() != term {
		t.Fatalf("sent %v, want the prepared snapshot (index %d) to %s in term %d", sent, applied, learnerID, term)
	}

	// Once the membership moves on, the prepared snapshot is no longer the applied state's:
	// a snapshot of the membership as applied now is made instead.
	up := membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: learnerID, PeerURLs: []string{"http://127.0.0.1:3"}}}
	if _, err := n.Propose(ctx, term, up); err != nil {
		t.Fatal(err)
	}
	fresh, err := n.currentSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if fresh == prepared || fresh.GetMetadata().GetIndex() != n.applied.Load() {
		t.Fatalf("snapshot at index %d, want a new one at the applied index %d", fresh.GetMetadata().GetIndex(), n.applied.Load())
	}
	if c, err := storage.SnapshotCluster(fresh); err != nil || c.Member(learnerID).PeerURLs[0] != "http://127.0.0.1:3" {
		t.Fatalf("fresh snapshot: %v, %v", c, err)
	}
}
