package membership

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestApplyRecorded(t *testing.T) {
	c := cluster(2, 0)
	at := time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC)
	by := Origin{CN: "root", Address: "10.0.0.5:53122"}
	steps := []struct {
		ch   Change
		want Event
	}{
		{Change{Kind: KindAdd, Member: Member{ID: 9, Name: "new", PeerURLs: []string{"http://a:1"}, IsLearner: true}, By: by},
			Event{Change: "add-learner", MemberID: 9, Name: "new", PeerURLs: []string{"http://a:1"}, IsLearner: true, By: by}},
		{Change{Kind: KindPublish, Member: Member{ID: 9, Name: "new", ClientURLs: []string{"http://a:2"}}, By: Origin{Clusterd: OriginPublish}},
			Event{Change: "publish", MemberID: 9, Name: "new", PeerURLs: []string{"http://a:1"}, IsLearner: true, By: Origin{Clusterd: OriginPublish}}},
		{Change{Kind: KindPromote, Member: Member{ID: 9}}, Event{Change: "promote", MemberID: 9, Name: "new", PeerURLs: []string{"http://a:1"}}},
		{Change{Kind: KindUpdate, Member: Member{ID: 9, PeerURLs: []string{"http://b:1"}}}, Event{Change: "update", MemberID: 9, Name: "new", PeerURLs: []string{"http://b:1"}}},
		{Change{Kind: KindRemove, Member: Member{ID: 9}, By: Origin{Address: "x:1", Via: "member prune"}},
			Event{Change: "remove", MemberID: 9, Name: "new", PeerURLs: []string{"http://b:1"}, By: Origin{Address: "x:1", Via: "member prune"}}},
		{addVoter(10), Event{Change: "add", MemberID: 10, Name: "new", PeerURLs: []string{"http://127.0.0.1:9999"}}},
	}
	for i, s := range steps {
		var err error
		st := Stamp{Index: uint64(10 + i), Term: 2, Time: at.Add(time.Duration(i) * time.Second)}
		if c, err = c.ApplyRecorded(s.ch, st, 0); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		s.want.RaftIndex, s.want.Term, s.want.Time = st.Index, st.Term, st.Time
		if got := c.History.Events()[i]; !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d: recorded %+v, want %+v", i, got, s.want)
		}
	}
	// A publish that changes nothing (a restart) is not recorded; one with a new URL is.
	pub := Change{Kind: KindPublish, Member: Member{ID: 10, Name: "new", ClientURLs: []string{"http://a:3"}}}
	once, err := c.ApplyRecorded(pub, Stamp{Index: 97}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if twice, err := once.ApplyRecorded(pub, Stamp{Index: 98}, 0); err != nil || once.History.Len() != len(steps)+1 || twice.History.Len() != len(steps)+1 {
		t.Fatalf("publish twice: %v, %d then %d events", err, once.History.Len(), twice.History.Len())
	}
	// A refused change is not recorded, and the cluster is the same value.
	if n, err := c.ApplyRecorded(Change{Kind: KindRemove, Member: Member{ID: 9}}, Stamp{Index: 99}, 0); err == nil || n != c || n.History.Len() != len(steps) {
		t.Fatalf("refused change: err %v, %d events", err, n.History.Len())
	}
	// Answers that list members carry no history.
	if c.WithoutRemoved().History.Len() != 0 {
		t.Fatal("WithoutRemoved kept the history")
	}
}

// An entry from an older version has no time and no origin: it is recorded all the same.
func TestApplyRecordedOldEntry(t *testing.T) {
	var ch Change
	if err := json.Unmarshal([]byte(`{"kind":2,"member":{"id":2,"name":"","peerURLs":null}}`), &ch); err != nil {
		t.Fatal(err)
	}
	c, err := cluster(3, 0).ApplyRecorded(ch, Stamp{Index: 7, Term: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev := c.History.Events()[0]
	if !ev.Time.IsZero() || !ev.By.IsZero() || ev.By.String() != "" || ev.Name != "m2" || ev.RaftIndex != 7 {
		t.Fatalf("recorded %+v", ev)
	}
}

// History bounds itself and shares events between its ages: every age reads what it held.
func TestHistoryBounded(t *testing.T) {
	for _, max := range []int{0, 1, 3, 50, 1000} {
		var h History
		var ages []History
		for i := range 300 {
			h = h.With(Event{RaftIndex: uint64(i)}, max)
			ages = append(ages, h)
		}
		for i, a := range ages {
			n := i + 1
			keep := n
			if max > 0 && keep > max {
				keep = max
			}
			evs := a.Events()
			if len(evs) != keep || a.Dropped() != uint64(n-keep) || a.Total() != uint64(n) {
				t.Fatalf("max %d, age %d: %d events, %d dropped", max, i, len(evs), a.Dropped())
			}
			if newest := a.Newest(2); len(newest) != min(2, keep) || newest[len(newest)-1].RaftIndex != evs[len(evs)-1].RaftIndex {
				t.Fatalf("max %d, age %d: Newest(2) = %+v", max, i, newest)
			}
			for j, ev := range evs {
				if ev.RaftIndex != uint64(n-keep+j) {
					t.Fatalf("max %d, age %d: event %d is %d", max, i, j, ev.RaftIndex)
				}
			}
		}
	}
	// Two histories made from one do not see each other's events.
	base := NewHistory([]Event{{RaftIndex: 1}}, 0, 0)
	a, b := base.With(Event{RaftIndex: 2}, 0), base.With(Event{RaftIndex: 3}, 0)
	if a.Events()[1].RaftIndex != 2 || b.Events()[1].RaftIndex != 3 || base.Len() != 1 {
		t.Fatal("histories made from one share their new events")
	}
	// Nor when they are made at once.
	var wg sync.WaitGroup
	made := make([]History, 8)
	for i := range made {
		wg.Go(func() { made[i] = a.With(Event{RaftIndex: uint64(10 + i)}, 0) })
	}
	wg.Wait()
	for i, m := range made {
		if evs := m.Events(); len(evs) != 3 || evs[1].RaftIndex != 2 || evs[2].RaftIndex != uint64(10+i) {
			t.Fatalf("history %d made at once: %+v", i, evs)
		}
	}
	if a.Len() != 2 || a.Events()[1].RaftIndex != 2 {
		t.Fatal("recording changed the history recorded on")
	}
	c := (&Cluster{History: NewHistory(make([]Event, 10), 5, 0)}).WithMaxHistory(4)
	if c.History.Len() != 4 || c.History.Dropped() != 11 {
		t.Fatalf("WithMaxHistory: %d kept, %d dropped", c.History.Len(), c.History.Dropped())
	}
}

func TestOriginString(t *testing.T) {
	for _, tc := range []struct {
		o    Origin
		want string
	}{
		{Origin{}, ""},
		{Origin{CN: "root", Address: "10.0.0.5:53122"}, "cn=root address=10.0.0.5:53122"},
		{Origin{Address: "[::1]:5", Via: "member prune"}, `address=[::1]:5 via="member prune"`},
		{Origin{CN: "John Smith", Address: "a:1"}, `cn="John Smith" address=a:1`},
		{Origin{CN: "é=\n"}, `cn="é=\n"`},
		{Origin{Clusterd: OriginForceNewCluster}, "clusterd=force-new-cluster"},
	} {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
}

// DroppedTo drops the events before a sequence number, and no more than the history holds.
func TestHistoryDroppedTo(t *testing.T) {
	var h History
	for i := range 300 {
		h = h.With(Event{RaftIndex: uint64(i)}, 60)
	}
	if d := h.DroppedTo(250); d.Len() != 50 || d.Dropped() != 250 || d.Events()[0].RaftIndex != 250 || h.DroppedTo(10).Len() != 60 {
		t.Fatalf("DroppedTo(250): %d events from %d", d.Len(), d.Events()[0].RaftIndex)
	}
	if d := h.DroppedTo(1000); d.Len() != 0 || d.Dropped() != 1000 {
		t.Fatalf("DroppedTo(1000): %d events, %d dropped", d.Len(), d.Dropped())
	}
}

// An answer about who is or was a member leaves the history out, and keeps the rest.
func TestWithoutHistory(t *testing.T) {
	c := NewCluster(9, []*Member{{ID: 1, Name: "a"}})
	c.Removed = NewIDSet(5)
	c.History = NewHistory([]Event{{RaftIndex: 3}}, 2, 0)
	n := c.WithoutHistory()
	if !n.History.IsZero() || !n.IsRemoved(5) || n.Member(1) == nil || n.ID != 9 || c.History.Len() != 1 {
		t.Fatalf("WithoutHistory: %+v", n)
	}
}

// RemovalOf finds the event that removed a member, however old, and nothing for a member not
// removed or whose removal the bound dropped.
func TestRemovalOf(t *testing.T) {
	var h History
	h = h.With(Event{RaftIndex: 1, Change: "remove", MemberID: 5}, 0)
	h = h.With(Event{RaftIndex: 2, Change: "remove", MemberID: 9, By: Origin{Clusterd: OriginForceNewCluster}}, 0)
	for i := range 300 {
		h = h.With(Event{RaftIndex: uint64(3 + i), Change: "update", MemberID: 7}, 0)
	}
	if ev, ok := h.RemovalOf(9); !ok || ev.RaftIndex != 2 || ev.By.Clusterd != OriginForceNewCluster {
		t.Fatalf("removal of 9: %+v, %v", ev, ok)
	}
	if ev, ok := h.RemovalOf(7); ok {
		t.Fatalf("7 was never removed, got %+v", ev)
	}
	bounded := h.With(Event{RaftIndex: 1e6, Change: "update", MemberID: 7}, 100)
	if ev, ok := bounded.RemovalOf(5); ok {
		t.Fatalf("the bound dropped 5's removal, got %+v", ev)
	}
}

// BenchmarkRecordAtBound is one change recorded on a history at the default bound: the copy of
// its events that keeps every older History as it was.
func BenchmarkRecordAtBound(b *testing.B) {
	var h History
	for i := range DefaultMaxHistory {
		h = h.With(Event{RaftIndex: uint64(i), Change: "update", MemberID: 7, PeerURLs: []string{"http://127.0.0.1:41004"},
			By: Origin{Address: "127.0.0.1:53122"}}, DefaultMaxHistory)
	}
	ev := Event{RaftIndex: 1 << 20, Change: "update", MemberID: 7}
	for b.Loop() {
		_ = h.With(ev, DefaultMaxHistory)
	}
}
