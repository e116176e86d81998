package storage

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A raft snapshot's data is the membership as applied at its index, encoded as JSON. It lives
// here, beside the rest of what a member writes, so that writing a data dir offline (a
// bootstrap, `clusterctl snapshot restore`) needs this package and not the Ready loop's.

// SnapshotData encodes a membership as a snapshot's data.
func SnapshotData(c *membership.Cluster) ([]byte, error) { return json.Marshal(c) }

// SnapshotCluster decodes the membership a snapshot holds.
func SnapshotCluster(s *raftpb.Snapshot) (*membership.Cluster, error) {
	c := &membership.Cluster{}
	if err := json.Unmarshal(s.GetData(), c); err != nil {
		return nil, fmt.Errorf("snapshot at %d: %w", s.GetMetadata().GetIndex(), err)
	}
	return c, nil
}

// ConfState is raft's configuration for a membership: its voters and learners.
func ConfState(c *membership.Cluster) *raftpb.ConfState {
	cs := &raftpb.ConfState{}
	for _, id := range c.Voters() {
		cs.Voters = append(cs.Voters, uint64(id))
	}
	for _, id := range c.Learners() {
		cs.Learners = append(cs.Learners, uint64(id))
	}
	return cs
}
