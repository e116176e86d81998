package membership

import (
	"encoding/json"
	"slices"
	"testing"
)

// Sets of every age stay as they were while later ones grow, and JSON carries a set whole.
func TestIDSet(t *testing.T) {
	var sets []IDSet
	s := IDSet{}
	for i := 1; i <= 3000; i++ {
		sets = append(sets, s)
		s = s.With(ID(i))
	}
	if s.Len() != 3000 || !s.Has(1) || !s.Has(3000) || s.Has(3001) {
		t.Fatalf("len %d", s.Len())
	}
	if s.With(7).Len() != 3000 {
		t.Fatal("adding an ID already in the set grew it")
	}
	for n, old := range sets {
		if old.Len() != n || old.Has(ID(n+1)) || n > 0 && !old.Has(ID(n)) {
			t.Fatalf("the set of %d IDs changed: len %d", n, old.Len())
		}
	}
	b, err := json.Marshal(struct {
		R IDSet `json:"removed,omitzero"`
	}{sets[3]})
	if err != nil || string(b) != `{"removed":{"1":{},"2":{},"3":{}}}` {
		t.Fatalf("%s %v", b, err)
	}
	if b, _ := json.Marshal(struct {
		R IDSet `json:"removed,omitzero"`
	}{}); string(b) != `{}` {
		t.Fatalf("empty set: %s", b)
	}
	var back IDSet
	if err := json.Unmarshal([]byte(`{"1":{},"2":{},"3":{}}`), &back); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(back.All()); !slices.Equal(got, []ID{1, 2, 3}) {
		t.Fatalf("decoded %v", got)
	}
}
