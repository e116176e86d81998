package membership

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
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
	// The history in the JSON of an earlier version's snapshot comes back equal.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back := &Cluster{}
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.History.Events(), c.History.Events()) || back.History.Dropped() != 0 {
		t.Fatalf("round trip: %+v", back.History.Events())
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
	b, _ := json.Marshal(ev)
	if string(b) != `{"raftIndex":7,"term":3,"change":"remove","memberID":2,"name":"m2","peerURLs":["http://127.0.0.1:2380"]}` {
		t.Fatalf("stored as %s", b)
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
	// Nor when they are made at once: one takes the slot after a's events, the others copy.
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
	shared := 0
	for _, m := range made {
		if &m.recent[0] == &a.recent[0] {
			shared++
		}
	}
	if shared != 1 {
		t.Fatalf("%d of the histories made at once share a's events; want one, the others copy", shared)
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

// A record read back is the event written, and any bytes at all are refused or read without a
// panic or an allocation beyond their size.
func FuzzDecodeEvent(f *testing.F) {
	ev := Event{RaftIndex: 7, Term: 2, Time: time.Unix(1e9, 0).UTC(), Change: "add-learner", MemberID: 9, Name: "n",
		PeerURLs: []string{"http://a:1", "http://b:1"}, IsLearner: true, By: Origin{CN: "root", Address: "a:1", Via: "member prune"}}
	f.Add(ev.AppendBinary(nil))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEvent(b)
		if err != nil {
			if CheckRecord(b) == nil {
				t.Fatalf("%v: refused (%v), but CheckRecord passes it", b, err)
			}
			return
		}
		if CheckRecord(b) != nil {
			t.Fatalf("%v: decoded, but CheckRecord refuses it", b)
		}
		again, err := DecodeEvent(e.AppendBinary(nil))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("%+v read back as %+v, %v", e, again, err)
		}
	})
}

// An event read keeps nothing of the bytes it was read from: a bbolt value is gone once its
// transaction ends (snapshot restore crashed on a history read from a closed file).
func TestDecodeEventCopies(t *testing.T) {
	ev := Event{RaftIndex: 7, Change: "remove", MemberID: 9, Name: "n", PeerURLs: []string{"http://a:1"}}
	b := ev.AppendBinary(nil)
	want := slices.Clone(b)
	got, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if rec := got.AppendBinary(nil); !slices.Equal(rec, want) {
		t.Fatalf("the record changed with the bytes it was read from: %v, want %v", rec, want)
	}
}

// A history read from records holds them as they are: it reads back the same events as the
// history they came from, bounds and records on them, and writes them out again unchanged.
func TestHistoryFromRecords(t *testing.T) {
	var h History
	for i := range 100 {
		h = h.With(Event{RaftIndex: uint64(i), Change: "update", MemberID: 7, PeerURLs: []string{fmt.Sprintf("http://a:%d", i)}}, 60)
	}
	data := h.AppendRecords(nil)
	r, err := HistoryFromRecords(data, h.Dropped())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Events(), h.Events()) || r.Dropped() != 40 || !slices.Equal(r.AppendRecords(nil), data) {
		t.Fatalf("read back %d events, %d dropped", r.Len(), r.Dropped())
	}
	// Recording on it folds the records into a new base now and then: the events stay in order.
	for i := 100; i < 300; i++ {
		r = r.With(Event{RaftIndex: uint64(i)}, 60)
		h = h.With(Event{RaftIndex: uint64(i)}, 60)
	}
	if !reflect.DeepEqual(r.Events(), h.Events()) || r.Dropped() != h.Dropped() {
		t.Fatalf("after 200 more: %d events, %d dropped; want %d, %d", r.Len(), r.Dropped(), h.Len(), h.Dropped())
	}
	if d := r.DroppedTo(250); d.Len() != 50 || d.Dropped() != 250 || d.Events()[0].RaftIndex != 250 || r.DroppedTo(10).Len() != 60 {
		t.Fatalf("DroppedTo(250): %d events from %d", d.Len(), d.Events()[0].RaftIndex)
	}
	if d := r.DroppedTo(1000); d.Len() != 0 || d.Dropped() != 1000 {
		t.Fatalf("DroppedTo(1000): %d events, %d dropped", d.Len(), d.Dropped())
	}
	for _, bad := range [][]byte{{5, 1, 2}, {3, 2, 0, 0}, append(slices.Clone(data), 1)} {
		if _, err := HistoryFromRecords(bad, 0); err == nil {
			t.Errorf("%v read as records", bad)
		}
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
	for i := range 3 * blockEvents {
		h = h.With(Event{RaftIndex: uint64(3 + i), Change: "update", MemberID: 7}, 0)
	}
	if ev, ok := h.RemovalOf(9); !ok || ev.RaftIndex != 2 || ev.By.Clusterd != OriginForceNewCluster {
		t.Fatalf("removal of 9: %+v, %v", ev, ok)
	}
	if ev, ok := h.RemovalOf(7); ok {
		t.Fatalf("7 was never removed, got %+v", ev)
	}
	bounded := h.With(Event{RaftIndex: 1e6, Change: "update", MemberID: 7}, blockEvents)
	if ev, ok := bounded.RemovalOf(5); ok {
		t.Fatalf("the bound dropped 5's removal, got %+v", ev)
	}
	// Newest first, block by block, it finds what a scan of every kept event finds, whatever
	// part of the oldest block the bound skips.
	for _, bound := range []int{1, 7, blockEvents - 1, blockEvents + 3, 2*blockEvents + 5} {
		var h History
		for i := range 3*blockEvents + 11 {
			h = h.With(Event{RaftIndex: uint64(i), Change: "remove", MemberID: ID(i % 50)}, bound)
		}
		evs := h.Events()
		for id := range ID(50) {
			var want Event
			found := false
			for i := len(evs) - 1; i >= 0 && !found; i-- {
				want, found = evs[i], evs[i].MemberID == id
			}
			if got, ok := h.RemovalOf(id); ok != found || ok && got.RaftIndex != want.RaftIndex {
				t.Fatalf("bound %d, member %d: %+v, %v; the kept events say %+v, %v", bound, id, got, ok, want, found)
			}
		}
	}
}
