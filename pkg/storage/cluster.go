package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// saveCluster writes the applied membership: one key a member, and the IDs removed since the
// last write added to the removed bucket (which only grows), so a write costs the change, not
// the history.
func saveCluster(tx *bolt.Tx, c *membership.Cluster, removedIDs []membership.ID) error {
	members := tx.Bucket(bucketMembers)
	var stale [][]byte
	if err := members.ForEach(func(k, _ []byte) error {
		if _, ok := c.Members[membership.ID(binary.BigEndian.Uint64(k))]; !ok {
			stale = append(stale, k)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range stale {
		if err := members.Delete(k); err != nil {
			return err
		}
	}
	for id, m := range c.Members {
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := members.Put(u64(uint64(id)), v); err != nil {
			return err
		}
	}
	removed := tx.Bucket(bucketRemoved)
	for _, id := range removedIDs {
		if err := removed.Put(u64(uint64(id)), nil); err != nil {
			return err
		}
	}
	return nil
}

// loadCluster reads the membership saveCluster wrote.
func loadCluster(tx *bolt.Tx, clusterID membership.ID) (*membership.Cluster, error) {
	c := membership.NewCluster(clusterID, nil)
	err := tx.Bucket(bucketMembers).ForEach(func(k, v []byte) error {
		m := &membership.Member{}
		if err := json.Unmarshal(v, m); err != nil {
			return fmt.Errorf("member %x: %w", k, err)
		}
		c.Members[m.ID] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	var removed []membership.ID
	err = tx.Bucket(bucketRemoved).ForEach(func(k, _ []byte) error {
		removed = append(removed, membership.ID(binary.BigEndian.Uint64(k)))
		return nil
	})
	c.Removed = membership.NewIDSet(removed...)
	return c, err
}
