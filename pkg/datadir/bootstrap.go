package datadir

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// Initial is one member of --initial-cluster.
type Initial struct {
	Name string
	URLs []string
}

// ParseInitialCluster reads name=url,name=url. A name given twice has several peer URLs, as
// etcd reads it; a URL given to two names is refused.
func ParseInitialCluster(s string) ([]Initial, error) {
	var out []Initial
	index := map[string]int{}
	usedBy := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || u == "" {
			return nil, fmt.Errorf("--initial-cluster %q: each entry must be name=peer-url", s)
		}
		if err := membership.ValidateURL(u); err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: %v", s, err)
		}
		if other, ok := usedBy[u]; ok {
			return nil, fmt.Errorf("--initial-cluster %q: peer URL %s is given to both %q and %q", s, u, other, name)
		}
		usedBy[u] = name
		if i, ok := index[name]; ok {
			out[i].URLs = append(out[i].URLs, u)
			continue
		}
		index[name] = len(out)
		out = append(out, Initial{Name: name, URLs: []string{u}})
	}
	return out, nil
}

// SameURLs reports whether two URL lists hold the same URLs in any order.
func SameURLs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// MemberID derives a bootstrap member's ID from its peer URLs and the cluster token.
func MemberID(urls []string, token string) membership.ID {
	u := slices.Clone(urls)
	sort.Strings(u)
	return hashID(strings.Join(u, ",") + "|" + token)
}

// ClusterID derives the cluster ID from its first members' IDs and the token.
func ClusterID(ids []membership.ID, token string) membership.ID {
	s := slices.Clone(ids)
	slices.Sort(s)
	var b strings.Builder
	for _, id := range s {
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
	var local membership.ID
	for _, m := range c.Members {
		if m.Name == name {
			local = m.ID
		}
	}
	if local == 0 {
		return nil, fmt.Errorf("couldn't find local name %q in the initial cluster configuration", name)
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
