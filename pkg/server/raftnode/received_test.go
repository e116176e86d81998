package raftnode

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// snapshotMessage is the leader's snapshot at index of term 2 with data, to the learner.
func snapshotMessage(index uint64, data []byte, cs *raftpb.ConfState) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), From: proto.Uint64(uint64(leaderID)), To: proto.Uint64(uint64(learnerID)),
		Term: proto.Uint64(2), Snapshot: &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
			Index: proto.Uint64(index), Term: proto.Uint64(2), ConfState: cs,
		}}}
}

// A received snapshot is stepped as the leader sent it: the Ready applies its membership and
// stores it, and raft's storage holds it, data and all. A snapshot whose data is not a membership
// is refused before raft sees it, and the member goes on to take the next one.
func TestReceivedSnapshot(t *testing.T) {
	n, tr := startLearner(t)
	c := n.Cluster()
	c, err := c.ApplyRecorded(membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: 3, PeerURLs: []string{"http://127.0.0.1:3"}, IsLearner: true}},
		membership.Stamp{Index: 20, Term: 2, Time: time.Unix(1, 0)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := storage.SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}

	junk := snapshotMessage(20, []byte("not a membership"), storage.ConfState(c))
	if err := n.Step(context.Background(), junk); !errors.Is(err, ErrRefused) {
		t.Fatalf("a snapshot whose data is not a membership: %v, want ErrRefused", err)
	}
	if err := n.Step(context.Background(), snapshotMessage(20, nil, storage.ConfState(c))); !errors.Is(err, ErrRefused) {
		t.Fatalf("a snapshot without data: %v, want ErrRefused", err)
	}
	// Of a term after the one the member started in.
	m := snapshotMessage(20, bytes.Clone(data), storage.ConfState(c))
	m.Term, m.Snapshot.Metadata.Term = proto.Uint64(3), proto.Uint64(3)
	step(t, n, m)
	waitUntil(t, "the snapshot applied", func() bool { return n.Applied() == 20 })
	// Applied up to the snapshot's index of its term: a snapshot this member makes before it
	// applies an entry (as a leader, for a new member) carries that term, the one peers hold.
	if got := n.appliedTerm.Load(); got != 3 {
		t.Fatalf("applied term %d after a snapshot of term 3", got)
	}
	if n.Cluster().Member(3) == nil || n.Cluster().History.Len() != 1 {
		t.Fatalf("applied membership %v, history of %d, want member 3 and its addition", n.Cluster().Members, n.Cluster().History.Len())
	}
	waitUntil(t, "the snapshot acknowledged", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, m := range tr.sent {
			if m.GetType() == raftpb.MessageType_MsgAppResp && m.GetIndex() == 20 && !m.GetReject() {
				return true
			}
		}
		return false
	})

	st, err := n.store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.Snapshot.GetMetadata().GetIndex() != 20 || !bytes.Equal(st.Snapshot.GetData(), data) {
		t.Fatalf("stored snapshot at index %d with %d bytes of data, want index 20 and the %d bytes received",
			st.Snapshot.GetMetadata().GetIndex(), len(st.Snapshot.GetData()), len(data))
	}
	mem, err := n.mem.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if mem.GetMetadata().GetIndex() != 20 || !bytes.Equal(mem.GetData(), data) {
		t.Fatalf("raft's storage holds snapshot %d with %d bytes of data, want 20 with the %d bytes received", mem.GetMetadata().GetIndex(), len(mem.GetData()), len(data))
	}
}

// An append whose entry is not a proposal is refused before raft takes it: committed, it would
// stop the member when applied. The leader's next append goes in as usual.
func TestUndecodableEntryRefused(t *testing.T) {
	n, _ := startLearner(t)
	junk := promotion(t, 2)
	junk.Entries[0].Data = []byte("not a conf change")
	if err := n.Step(context.Background(), junk); !errors.Is(err, ErrRefused) {
		t.Fatalf("an append of an entry that is not a proposal: %v, want ErrRefused", err)
	}
	if last := n.LastIndex(); last != snapIndex {
		t.Fatalf("raft's log ends at %d after the refused append, want %d", last, snapIndex)
	}
	step(t, n, promotion(t, 2))
	waitVoter(t, n)
}
