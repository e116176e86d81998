package raftnode

import (
	"bytes"
	"context"
	"errors"
	"slices"
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

// A received snapshot's data goes beside raft: raft restores the metadata, the Ready applies the
// membership held for it and stores the data, and raft's storage keeps none. A snapshot whose
// data is not a membership is refused before raft sees it, and the member goes on to take the
// next one.
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
	if mem.GetMetadata().GetIndex() != 20 || len(mem.GetData()) != 0 {
		t.Fatalf("raft's storage holds snapshot %d with %d bytes of data, want 20 without data", mem.GetMetadata().GetIndex(), len(mem.GetData()))
	}
	n.received.mu.Lock()
	left := len(n.received.held)
	n.received.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d snapshots still held after the Ready took the one received", left)
	}
}

// The snapshots held for raft are few, newest kept, and only the one raft hands back is taken.
func TestHeldSnapshots(t *testing.T) {
	data, err := storage.SnapshotData(membership.NewCluster(7, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:1"}}}))
	if err != nil {
		t.Fatal(err)
	}
	snap := func(index, term uint64) *raftpb.Snapshot {
		return &raftpb.Snapshot{Data: bytes.Clone(data), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(term),
			ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	}
	var h heldSnapshots
	for _, i := range []uint64{30, 10, 20, 50, 40, 60} {
		s := snap(i, 2)
		if err := h.hold(s, 5, 0); err != nil {
			t.Fatal(err)
		}
		if s.Data != nil {
			t.Fatalf("snapshot %d still carries its data once held", i)
		}
	}
	var indexes []uint64
	for _, x := range h.held {
		indexes = append(indexes, x.index)
	}
	if want := []uint64{30, 40, 50, 60}; !slices.Equal(indexes, want) {
		t.Fatalf("held %v, want the newest %d in order %v", indexes, maxHeld, want)
	}
	if _, err := h.take(snap(40, 3)); err == nil {
		t.Fatal("took snapshot 40 of term 3, which was held for term 2")
	}
	if _, err := h.take(snap(10, 2)); err == nil {
		t.Fatal("took snapshot 10, which was dropped")
	}
	got, err := h.take(snap(40, 2))
	if err != nil || got.index != 40 || !bytes.Equal(got.data, data) || got.cluster.Member(1) == nil {
		t.Fatalf("take 40: %+v, %v", got, err)
	}
	if len(h.held) != 2 || h.held[0].index != 50 {
		t.Fatalf("after taking 40, held %d starting at %d, want 50 and 60", len(h.held), h.held[0].index)
	}
	// Holding drops what the member has applied already.
	if err := h.hold(snap(70, 2), 55, 0); err != nil {
		t.Fatal(err)
	}
	if len(h.held) != 2 || h.held[0].index != 60 {
		t.Fatalf("after applying 55, held %d starting at %d, want 60 and 70", len(h.held), h.held[0].index)
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
