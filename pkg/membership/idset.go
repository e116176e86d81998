package membership

import (
	"encoding/json"
	"iter"
	"maps"
)

// IDSet is the set of removed IDs: it only grows, and it is as large as the cluster's whole
// history. A set never changes once made; With returns a new one that shares the old one's
// IDs, so adding costs a copy of the few IDs added lately, not of the whole history, and
// memberships of every age can be read at once. The zero IDSet is empty.
type IDSet struct {
	base   map[ID]struct{} // shared between sets, never changed
	recent map[ID]struct{} // this set's own additions since base was made
}

// NewIDSet returns a set holding ids.
func NewIDSet(ids ...ID) IDSet {
	s := IDSet{base: make(map[ID]struct{}, len(ids))}
	for _, id := range ids {
		s.base[id] = struct{}{}
	}
	return s
}

// Has reports whether id is in the set.
func (s IDSet) Has(id ID) bool {
	if _, ok := s.recent[id]; ok {
		return true
	}
	_, ok := s.base[id]
	return ok
}

// IsZero reports whether the set is empty, so that JSON leaves an empty set out (omitzero).
func (s IDSet) IsZero() bool { return s.Len() == 0 }

// Len is the number of IDs in the set.
func (s IDSet) Len() int { return len(s.base) + len(s.recent) }

// With returns the set with id added; s is unchanged.
func (s IDSet) With(id ID) IDSet {
	if s.Has(id) {
		return s
	}
	recent := make(map[ID]struct{}, len(s.recent)+1)
	maps.Copy(recent, s.recent)
	recent[id] = struct{}{}
	// Fold the additions into a new base once copying them costs about as much as a lookup
	// table of the whole set amortised over them: an addition then costs O(sqrt(n)).
	if len(recent)*len(recent) <= len(s.base) || len(recent) < 32 {
		return IDSet{base: s.base, recent: recent}
	}
	base := make(map[ID]struct{}, len(s.base)+len(recent))
	maps.Copy(base, s.base)
	maps.Copy(base, recent)
	return IDSet{base: base}
}

// All yields every ID in the set, in no particular order.
func (s IDSet) All() iter.Seq[ID] {
	return func(yield func(ID) bool) {
		for id := range s.base {
			if !yield(id) {
				return
			}
		}
		for id := range s.recent {
			if !yield(id) {
				return
			}
		}
	}
}

// MarshalJSON writes the set as an object of IDs: how a joining member's peers are stored
// (pkg/storage's join_peers).
func (s IDSet) MarshalJSON() ([]byte, error) {
	m := make(map[ID]struct{}, s.Len())
	for id := range s.All() {
		m[id] = struct{}{}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *IDSet) UnmarshalJSON(b []byte) error {
	var m map[ID]struct{}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = IDSet{base: m}
	return nil
}
