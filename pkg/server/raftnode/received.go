package raftnode

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A snapshot's data travels beside raft, not through it. raft never reads it, yet copies a
// snapshot it restores twice before handing it back in a Ready, and raft's MemoryStorage once
// more; the data is the whole membership history, most of what a joining member receives. So
// Step decodes the data of a snapshot a peer sent, refuses one that does not decode, or whose
// configuration is not the membership it holds, before raft has seen it, and steps the message
// with the metadata alone; the Ready that hands the snapshot back takes its membership from
// here (heldSnapshots.take). Nothing in raft's storage carries
// data either: a leader sends the membership as applied now (currentSnapshot), never a stored
// snapshot.

// maxHeld bounds the received snapshots held for raft: a leader sends one to a member at a time,
// so more than one is held only across a change of leader, and raft ignores the older of two.
const maxHeld = 4

// heldSnapshot is a received snapshot's data and the membership decoded from it.
type heldSnapshot struct {
	index, term uint64
	data        []byte
	cluster     *membership.Cluster
}

// heldSnapshots are the received snapshots raft may still hand back, oldest first.
type heldSnapshots struct {
	mu   sync.Mutex
	held []heldSnapshot
}

// hold decodes s, keeps its data and membership, and leaves s with its metadata alone. Held
// snapshots at or below applied are dropped: raft hands back none of those.
func (h *heldSnapshots) hold(s *raftpb.Snapshot, applied uint64, maxHistory int) error {
	c, err := storage.SnapshotCluster(s)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	// raft restores the configuration the metadata names, and panics on one it cannot.
	if !sameConf(s.GetMetadata().GetConfState(), storage.ConfState(c)) {
		return fmt.Errorf("%w: snapshot at %d: its configuration is not its membership's", ErrRefused, s.GetMetadata().GetIndex())
	}
	held := heldSnapshot{index: s.GetMetadata().GetIndex(), term: s.GetMetadata().GetTerm(), data: s.GetData(),
		cluster: c.WithMaxHistory(maxHistory)}
	s.Data = nil
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropThrough(applied)
	// In index order; a second snapshot of an index replaces the first.
	i, found := slices.BinarySearchFunc(h.held, held.index, func(x heldSnapshot, index uint64) int { return cmp.Compare(x.index, index) })
	if found {
		h.held[i] = held
	} else {
		h.held = slices.Insert(h.held, i, held)
	}
	if len(h.held) > maxHeld {
		h.held = h.held[1:]
	}
	return nil
}

// take returns the data and membership of the snapshot raft handed back, and drops it with
// every older one.
func (h *heldSnapshots) take(s *raftpb.Snapshot) (heldSnapshot, error) {
	index, term := s.GetMetadata().GetIndex(), s.GetMetadata().GetTerm()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, held := range h.held {
		if held.index == index && held.term == term {
			h.dropThrough(index)
			return held, nil
		}
	}
	return heldSnapshot{}, fmt.Errorf("raft restored snapshot %d (term %d), which this member did not receive", index, term)
}

func (h *heldSnapshots) dropThrough(index uint64) {
	i := 0
	for i < len(h.held) && h.held[i].index <= index {
		i++
	}
	h.held = h.held[i:]
}
