package datadir

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// MemberID derives a bootstrap member's ID from its peer URLs and the cluster token.
func MemberID(urls []string, token string) membership.ID {
	return hashID(strings.Join(slices.Sorted(slices.Values(urls)), ",") + "|" + token)
}

// ClusterID derives the cluster ID from its first members' IDs and the token.
func ClusterID(ids []membership.ID, token string) membership.ID {
	var b strings.Builder
	for _, id := range slices.Sorted(slices.Values(ids)) {
		b.WriteString(id.String())
	}
	return hashID(b.String() + "|" + token)
}

func hashID(s string) membership.ID {
	sum := sha256.Sum256([]byte(s))
	if id := membership.ID(binary.BigEndian.Uint64(sum[:8])); id != 0 {
		return id
	}
	return 1
}

// NewCluster is the membership --initial-cluster describes, with derived IDs.
func NewCluster(initial []Initial, token string) *membership.Cluster {
	var members []*membership.Member
	var ids []membership.ID
	for _, m := range initial {
		id := MemberID(m.URLs, token)
		ids = append(ids, id)
		members = append(members, &membership.Member{ID: id, Name: m.Name, PeerURLs: m.URLs})
	}
	return membership.NewCluster(ClusterID(ids, token), members)
}

// Create writes the data directory of member name of cluster c: one snapshot at index 1 that
// holds the whole membership.
func Create(dir, name string, c *membership.Cluster) (*storage.Store, error) {
	local, err := memberNamed(c, name)
	if err != nil {
		return nil, err
	}
	data, err := storage.SnapshotData(c)
	if err != nil {
		return nil, err
	}
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: storage.ConfState(c),
	}}
	hs := &raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}
	return storage.Create(dir, storage.Identity{MemberID: local, ClusterID: c.ID, Name: name}, snap, hs, c, nil)
}

// memberNamed is the ID of the member of c called name.
func memberNamed(c *membership.Cluster, name string) (membership.ID, error) {
	for _, m := range c.Members {
		if m.Name == name {
			return m.ID, nil
		}
	}
	return 0, &NameNotInClusterError{Name: name}
}
