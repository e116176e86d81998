package storage

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A member's history is durable in two places, as the raft log is beside its snapshot: the
// stored raft snapshot holds the history up to it, and the history bucket the events recorded
// since, one clusterd.v2.Event each (pkg/wire) keyed by the event's sequence number (its
// position in everything ever recorded, 8 bytes big-endian), not by its raft index: a restored
// cluster's log starts again at 1 while its history goes on. Every stored snapshot, received from
// the leader or taken here, starts the bucket again empty, in the transaction that stores it: the
// bucket holds at most the changes of one snapshot interval, so a change writes to a small tree
// (a leaf and its branch) however long the history, and a snapshot received from the leader is
// written once, not once more key by key. meta's history_dropped is the count of older events
// dropped: no event before it is kept.

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
		v, err := proto.Marshal(wire.EventToProto(ev))
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

// loadHistory reads what saveHistory wrote, on top of the history of the stored snapshot snap
// (nil for none); a file without the bucket has only the snapshot's.
func loadHistory(tx *bolt.Tx, snap []byte) (membership.History, error) {
	base := snapshotHistory(snap).DroppedTo(getUint(tx.Bucket(bucketMeta), keyDropped))
	b := tx.Bucket(bucketHistory)
	if b == nil {
		return base, nil
	}
	var events []*pb.Event
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
		ev := &pb.Event{}
		if err := proto.Unmarshal(v, ev); err != nil {
			return membership.History{}, fmt.Errorf("history event %d: %w", binary.BigEndian.Uint64(k), err)
		}
		events = append(events, ev)
	}
	return base.WithEvents(wire.EventsFromProto(events), 0), nil
}
