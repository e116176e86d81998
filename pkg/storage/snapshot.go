package storage

import (
	"errors"
	"fmt"
	"math"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A raft snapshot's data is the membership as applied at its index, history included: a
// clusterd.v2.MembershipSnapshot (pkg/wire/clusterdpb), the generated message that declares it,
// with each event a clusterd.v2.Event as the history bucket stores it (history.go). It lives
// here, beside the rest of what a member writes, so that writing a data dir offline (a
// bootstrap, `clusterctl snapshot restore`) needs this package and not the Ready loop's.

// SnapshotData encodes a membership as a snapshot's data.
func SnapshotData(c *membership.Cluster) ([]byte, error) {
	s := &pb.MembershipSnapshot{Cluster: wire.ClusterToProto(c), HistoryDropped: c.History.Dropped()}
	for _, ev := range c.History.Events() {
		s.History = append(s.History, wire.EventToProto(ev))
	}
	return proto.Marshal(s)
}

// SnapshotCluster decodes the membership a snapshot holds.
func SnapshotCluster(s *raftpb.Snapshot) (*membership.Cluster, error) {
	c, err := snapshotCluster(s.GetData())
	if err != nil {
		return nil, fmt.Errorf("snapshot at %d: %w", s.GetMetadata().GetIndex(), err)
	}
	return c, nil
}

func snapshotCluster(data []byte) (*membership.Cluster, error) {
	s := &pb.MembershipSnapshot{}
	if err := proto.Unmarshal(data, s); err != nil {
		return nil, err
	}
	if s.GetCluster() == nil {
		return nil, errors.New("no membership: not a snapshot's data, or cut short")
	}
	if s.GetHistoryDropped() > math.MaxInt64 {
		// The sequence numbers of the events after it, which key them on disk, would wrap.
		return nil, fmt.Errorf("history: %d events dropped", s.GetHistoryDropped())
	}
	c := wire.ClusterFromProto(s.GetCluster())
	c.History = membership.NewHistory(wire.EventsFromProto(s.GetHistory()), s.GetHistoryDropped(), 0)
	return c, nil
}

// snapshotHistory is the history that the data of a stored snapshot holds: none for no
// snapshot, or for data that does not decode, which the member's own membership does not come
// from and which datadir check reports.
func snapshotHistory(data []byte) membership.History {
	c, err := snapshotCluster(data)
	if err != nil {
		return membership.History{}
	}
	return c.History
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
