package membership

import (
	"iter"
	"maps"
)

// IDSet is the set of removed IDs: it only grows, and it is as large as the cluster's whole
// history. A set never changes once made: With returns a copy, so memberships of every age can
// be read at once. A removal is rare and a copy of even DefaultMaxHistory IDs costs less than
// recording the change in the history. As JSON it is an object of IDs: how a joining member's
// peers are stored (pkg/storage's join_peers). The zero IDSet is empty.
type IDSet map[ID]struct{}

// NewIDSet returns a set holding ids.
func NewIDSet(ids ...ID) IDSet {
	s := make(IDSet, len(ids))
	for _, id := range ids {
		s[id] = struct{}{}
	}
	return s
}

// Has reports whether id is in the set.
func (s IDSet) Has(id ID) bool {
	_, ok := s[id]
	return ok
}

// IsZero reports whether the set is empty, so that JSON leaves an empty set out (omitzero).
func (s IDSet) IsZero() bool { return len(s) == 0 }

// Len is the number of IDs in the set.
func (s IDSet) Len() int { return len(s) }

// With returns the set with id added; s is unchanged.
func (s IDSet) With(id ID) IDSet {
	if s.Has(id) {
		return s
	}
	n := make(IDSet, len(s)+1)
	maps.Copy(n, s)
	n[id] = struct{}{}
	return n
}

// All yields every ID in the set, in no particular order.
func (s IDSet) All() iter.Seq[ID] { return maps.Keys(s) }
