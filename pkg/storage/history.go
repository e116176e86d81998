package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// The history bucket holds the events a member keeps, one JSON value each, keyed by the
// event's sequence number (its position in everything ever recorded, 8 bytes big-endian), not
// by its raft index: a restored cluster's log starts again at 1 while its history goes on.
// meta's history_dropped is the count of older events dropped; the keys start at it.

// saveHistory writes h: whole (all) for a snapshot or a new file, otherwise only the newest
// added events, and deletes the events the bound dropped.
func saveHistory(tx *bolt.Tx, h membership.History, added int, all bool) error {
	b, err := tx.CreateBucketIfNotExists(bucketHistory)
	if err != nil {
		return err
	}
	if all {
		if err := deleteRange(b, 0, 0); err != nil {
			return err
		}
		added = h.Len()
	}
	if added == 0 {
		return nil
	}
	events := h.Newest(added)
	seq := h.Total() - uint64(len(events))
	for _, ev := range events {
		v, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := b.Put(u64(seq), v); err != nil {
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

// loadHistory reads what saveHistory wrote; a file without the bucket has no history.
func loadHistory(tx *bolt.Tx) (membership.History, error) {
	b := tx.Bucket(bucketHistory)
	if b == nil {
		return membership.History{}, nil
	}
	var events []membership.Event
	err := b.ForEach(func(k, v []byte) error {
		var ev membership.Event
		if err := json.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("history event %d: %w", binary.BigEndian.Uint64(k), err)
		}
		events = append(events, ev)
		return nil
	})
	return membership.NewHistory(events, getUint(tx.Bucket(bucketMeta), keyDropped), 0), err
}
