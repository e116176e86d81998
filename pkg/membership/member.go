package membership

import (
	"fmt"
	"slices"
	"sort"
)

// ID identifies a member or a cluster. Zero is never a valid ID (raft reserves it).
type ID uint64

// String is the 16 lowercase hex digits that people and scripts read everywhere.
func (id ID) String() string { return fmt.Sprintf("%016x", uint64(id)) }

// Member is one member of the cluster.
//
// Stored as JSON in bbolt (the members bucket), in snapshots and in raft entries (Change), and
// sent between members: never rename a JSON tag.
type Member struct {
	ID         ID       `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
	// Started is set once the member's own process has published itself to the cluster;
	// it never goes back.
	Started bool `json:"started,omitempty"`
}

func (m *Member) clone() *Member {
	c := *m
	c.PeerURLs = slices.Clone(m.PeerURLs)
	c.ClientURLs = slices.Clone(m.ClientURLs)
	return &c
}

// Cluster is the whole membership. Treat a Cluster as immutable once shared: Apply returns a
// new one.
//
// Stored as JSON in bbolt (a joining member's peers, pkg/storage), its history left out: never
// rename a JSON tag. Snapshots and peers carry it as generated messages (pkg/wire).
type Cluster struct {
	ID      ID             `json:"clusterID"`
	Members map[ID]*Member `json:"members"`
	Removed IDSet          `json:"removed,omitzero"`
	// History is every applied change, bounded (history.go); it travels in snapshots, so a
	// member that joins later holds it whole. Never in JSON: stored and sent as generated
	// messages (pkg/storage, pkg/wire).
	History History `json:"-"`
}

// NewCluster returns a cluster with the given members, as a bootstrap writes it.
func NewCluster(id ID, members []*Member) *Cluster {
	c := &Cluster{ID: id, Members: map[ID]*Member{}}
	for _, m := range members {
		c.Members[m.ID] = m.clone()
	}
	return c
}

// copyMembers returns a copy of c whose members may be changed; the removed set and the history,
// which never change, are shared.
func (c *Cluster) copyMembers() *Cluster {
	n := &Cluster{ID: c.ID, Members: make(map[ID]*Member, len(c.Members)), Removed: c.Removed, History: c.History}
	for id, m := range c.Members {
		n.Members[id] = m.clone()
	}
	return n
}

// WithoutRemoved returns c without its removed IDs and its history, for an answer that lists
// the members only.
func (c *Cluster) WithoutRemoved() *Cluster {
	return &Cluster{ID: c.ID, Members: c.Members}
}

// WithoutHistory returns c without its history, for an answer about who is or was a member: the
// history is the megabytes of a long-lived cluster (read through the history call), and a member
// that asks again and again (a removed member confirming its removal) must not make its peers
// encode it each time.
func (c *Cluster) WithoutHistory() *Cluster {
	return &Cluster{ID: c.ID, Members: c.Members, Removed: c.Removed}
}

// Member returns a copy of the member with that ID, or nil.
func (c *Cluster) Member(id ID) *Member {
	if m, ok := c.Members[id]; ok {
		return m.clone()
	}
	return nil
}

// IsRemoved reports whether id was a member once and has been removed.
func (c *Cluster) IsRemoved(id ID) bool {
	return c.Removed.Has(id)
}

// List returns copies of the members sorted by ID, so every listing is in a stable order.
func (c *Cluster) List() []*Member {
	out := make([]*Member, 0, len(c.Members))
	for _, m := range c.Members {
		out = append(out, m.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Voters returns the IDs of the voting members, sorted.
func (c *Cluster) Voters() []ID { return c.ids(false) }

// Learners returns the IDs of the learners, sorted.
func (c *Cluster) Learners() []ID { return c.ids(true) }

func (c *Cluster) ids(learners bool) []ID {
	var out []ID
	for id, m := range c.Members {
		if m.IsLearner == learners {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
