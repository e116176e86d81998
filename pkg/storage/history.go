package storage

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A member's history is durable in two places, as the raft log is beside its snapshot: the
// stored raft snapshot holds the history up to it, and the history bucket the events recorded
// since, one binary record each (membership.Event.AppendBinary) keyed by the event's sequence
// number (its position in everything ever recorded, 8 bytes big-endian), not by its raft index:
// a restored cluster's log starts again at 1 while its history goes on. Every stored snapshot,
// received from the leader or taken here, starts the bucket again empty, in the transaction that
// stores it: the bucket holds at most the changes of one snapshot interval, so a change writes
// to a small tree (a leaf and its branch) however long the history, and a snapshot received from
// the leader, which may hold thousands of events, is written once, not once more key by key.
// Files of earlier versions kept every event in the bucket; Load reads the events the snapshot
// does not hold, and the next snapshot drops the rest. meta's history_dropped is the count of
// older events dropped: no event before it is kept.

// saveHistory writes the newest events u's changes added to its cluster's history and deletes
// those the bound dropped; with a snapshot, which holds the history up to it, the bucket starts
// again empty first.
func saveHistory(tx *bolt.Tx, u Update) error {
	if u.Snapshot != nil {
		// Dropping the bucket frees its pages without visiting its keys.
		if err := tx.DeleteBucket(bucketHistory); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	if u.Cluster == nil {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketHistory)
	if err != nil {
		return err
	}
	h := u.Cluster.History
	events := h.Newest(u.HistoryAdded)
	seq := h.Total() - uint64(len(events))
	for _, ev := range events {
		if err := b.Put(u64(seq), ev.AppendBinary(nil)); err != nil {
			return err
		}
		seq++
	}
	if h.Dropped() > 0 {
		if err := deleteRange(b, 0, h.Dropped()); err != nil {
			return err
		}
	}
	return putUint(tx.Bucket(bucketMeta), keyDropped, h.Dropped())
}

// loadHistory reads what saveHistory wrote, on top of the history of the stored snapshot snap
// (nil for none); a file without the bucket has only the snapshot's. The snapshot's records are
// kept compressed as they are, to be inflated when read; the bucket's are checked and decoded.
func loadHistory(tx *bolt.Tx, snap []byte) (membership.History, error) {
	base := snapshotHistory(snap).DroppedTo(getUint(tx.Bucket(bucketMeta), keyDropped))
	b := tx.Bucket(bucketHistory)
	if b == nil {
		return base, nil
	}
	var events []membership.Event
	c := b.Cursor()
	// From the first sequence number the snapshot does not hold.
	k, v := c.Seek(u64(base.Total()))
	if k != nil && binary.BigEndian.Uint64(k) > base.Total() {
		// The events before the bucket's are not in the snapshot either: its data does not
		// decode (datadir check reports it), and holds none. They count as dropped, so that a
		// damaged history does not stop the member and the next change's event follows the
		// last one recorded instead of taking the number of one the bucket holds.
		base = base.DroppedTo(binary.BigEndian.Uint64(k))
	}
	for ; k != nil; k, v = c.Next() {
		ev, err := membership.DecodeEvent(v)
		if err != nil {
			return membership.History{}, fmt.Errorf("history event %d: %w", binary.BigEndian.Uint64(k), err)
		}
		events = append(events, ev)
	}
	return base.WithEvents(events, 0), nil
}
