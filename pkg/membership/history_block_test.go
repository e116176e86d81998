package membership

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
)

func numbered(i int) Event {
	return Event{RaftIndex: uint64(i), Change: "update", MemberID: 7, PeerURLs: []string{fmt.Sprintf("http://a:%d", i%3)}}
}

// checkHistory fails unless h holds the events numbered from first to first+n-1.
func checkHistory(t *testing.T, what string, h History, first, n int) {
	t.Helper()
	evs, err := h.Read()
	if err != nil || len(evs) != n || h.Len() != n || h.Dropped() != uint64(first) {
		t.Fatalf("%s: %d events (Len %d), %d dropped, %v; want %d from %d", what, len(evs), h.Len(), h.Dropped(), err, n, first)
	}
	for j, ev := range evs {
		if ev.RaftIndex != uint64(first+j) {
			t.Fatalf("%s: event %d is %d, want %d", what, j, ev.RaftIndex, first+j)
		}
	}
	for _, k := range []int{1, blockEvents - 1, blockEvents + 1, n} {
		if got := h.Newest(k); !reflect.DeepEqual(got, evs[n-min(k, n):]) {
			t.Fatalf("%s: Newest(%d) is not the last %d events", what, k, k)
		}
	}
}

// receive is h as a member that receives a snapshot holds it: sent as blocks, or as the one
// stream of the snapshots of earlier versions.
func receive(t *testing.T, what string, h History, stream bool) History {
	t.Helper()
	var got History
	var err error
	if stream {
		deflated, events, dropped := h.AppendDeflated(nil)
		got, err = HistoryFromDeflated(deflated, events, dropped)
	} else {
		blocks, dropped := h.DeflatedBlocks()
		// Every block travels as it is, the oldest too, with the count of its events dropped:
		// a snapshot shares them.
		for i, b := range h.blocks {
			if c := b.compressed(); &blocks[i].Deflated[0] != &c[0] {
				t.Fatalf("%s: block %d was compressed again", what, i)
			}
		}
		got, err = HistoryFromBlocks(blocks, dropped)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return got
}

// The base is kept in blocks: a bound drops whole oldest blocks once none of their events is
// kept while reads show exactly the newest events, a snapshot carries exactly those, and a
// member that receives it, in either form, holds, bounds and records on it as the sender does.
func TestHistoryBlocks(t *testing.T) {
	for _, max := range []int{0, 1, 300, 1000, 1300} {
		var h History
		for i := range 2000 {
			h = h.With(numbered(i), max)
			if i%331 != 0 && i != 1999 {
				continue
			}
			n := i + 1
			keep := n
			if max > 0 {
				keep = min(n, max)
			}
			what := fmt.Sprintf("max %d, %d recorded", max, n)
			checkHistory(t, what, h, n-keep, keep)
			if h.skip >= blockEvents || len(h.recent) >= blockEvents || len(h.blocks) > keep/blockEvents+2 {
				t.Fatalf("%s: %d blocks, skip %d, %d recent", what, len(h.blocks), h.skip, len(h.recent))
			}
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("%s, received (stream %t)", what, stream)
				got := receive(t, what, h, stream)
				checkHistory(t, what, got, n-keep, keep)
				if max == 0 {
					continue
				}
				more, gotMore := h, got
				for j := n; j < n+max+blockEvents+3; j += 97 {
					more, gotMore = more.With(numbered(j), max), gotMore.With(numbered(j), max)
					if !reflect.DeepEqual(more.Events(), gotMore.Events()) || more.Dropped() != gotMore.Dropped() {
						t.Fatalf("%s: the receiver's history went another way after event %d", what, j)
					}
				}
				for _, b := range gotMore.blocks {
					if b.n > blockEvents && gotMore.skip > 0 {
						t.Fatalf("%s: a received block the bound reached was not split", what)
					}
				}
			}
		}
	}
}

// A member that receives a long history and records the next change at the bound reads none of
// it: it drops from the oldest block as it came, without inflating it or any other, so that
// the length of the history costs a joining member nothing but its bytes.
func TestHistoryReceivedAtBound(t *testing.T) {
	const max = 10 * blockEvents
	var h History
	for i := range max {
		h = h.With(numbered(i), max)
	}
	got := receive(t, "at the bound", h, false)
	got = got.With(numbered(max), max)
	for i, b := range got.blocks {
		if b.raw != nil {
			t.Fatalf("block %d of %d was inflated", i, len(got.blocks))
		}
	}
	checkHistory(t, "received, then one more", got, 1, max)
}

// Snapshots of earlier versions still read: records compressed as one closed DEFLATE stream
// (no count of events), and records uncompressed.
func TestHistoryEarlierJSON(t *testing.T) {
	var h History
	for i := range 700 {
		h = h.With(numbered(i), 600)
	}
	records := h.AppendRecords(nil)
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write(records)
	_ = w.Close()
	for name, v := range map[string]any{
		"deflated": map[string]any{"deflated": buf.Bytes(), "dropped": 100},
		"records":  map[string]any{"records": records, "dropped": 100},
		"current":  h,
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got History
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkHistory(t, name, got, 100, 600)
	}
	// And the earlier version reads the current one: its blocks and final block are one DEFLATE
	// stream, which it inflates whole (ignoring the count of events).
	deflated, _, _ := h.AppendDeflated(nil)
	inflated, err := io.ReadAll(flate.NewReader(bytes.NewReader(deflated)))
	if err != nil || !bytes.Equal(inflated, records) {
		t.Fatalf("the current stream read as one DEFLATE stream: %d bytes, %v", len(inflated), err)
	}
}

// A damaged stream is kept at receive, and refused when read, with a history error: never a
// panic, whether read, bounded, recorded on or sent on.
func TestHistoryDamaged(t *testing.T) {
	var h History
	for i := range 1000 {
		h = h.With(numbered(i), 0)
	}
	deflated, events, dropped := h.AppendDeflated(nil)
	// A byte flipped in a compressed block: the newest events are stored, not compressed, and
	// their records are checked for their form only, as the records a block inflates to are.
	blocks, _ := h.DeflatedBlocks()
	for _, tc := range []struct {
		name   string
		data   []byte
		events int
	}{
		{"flipped", func() []byte { b := slices.Clone(deflated); b[len(blocks[0].Deflated)/2] ^= 0x5a; return b }(), events},
		{"short", append(slices.Clone(deflated[:len(deflated)/2]), finalBlock...), events},
		{"count", slices.Clone(deflated), events + 1},
		// A claim far beyond the records: refused when read, never the size of a slice.
		{"claim", slices.Clone(deflated), 1 << 30},
	} {
		got, err := HistoryFromDeflated(tc.data, tc.events, dropped)
		if err != nil {
			t.Fatalf("%s: refused at receive: %v", tc.name, err)
		}
		if _, err := got.Read(); err == nil {
			t.Fatalf("%s: read", tc.name)
		}
		_ = got.Events()
		more := got.With(numbered(5000), 500)
		if _, err := more.Read(); err == nil || more.Len() != 500 {
			t.Fatalf("%s: bounded: %d events, %v", tc.name, more.Len(), err)
		}
		d2, e2, dr2 := more.AppendDeflated(nil)
		again, err := HistoryFromDeflated(d2, e2, dr2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.Read(); err == nil {
			t.Fatalf("%s: sent on, read", tc.name)
		}
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, deflated[:len(deflated)-1]} {
		if _, err := HistoryFromDeflated(bad, 3, 0); err == nil {
			t.Errorf("%v kept", bad)
		}
	}
	if _, err := HistoryFromDeflated(finalBlock, 0, 4); err != nil {
		t.Errorf("an empty history: %v", err)
	}
	// A dropped count after which the events' sequence numbers would wrap.
	const wraps = 1 << 63
	if _, err := HistoryFromDeflated(finalBlock, 0, wraps); err == nil {
		t.Error("a stream after 2^63 dropped events kept")
	}
	if _, err := HistoryFromBlocks(nil, wraps); err == nil {
		t.Error("blocks after 2^63 dropped events kept")
	}
	if _, err := HistoryFromRecords(nil, wraps); err == nil {
		t.Error("records after 2^63 dropped events kept")
	}
}

// Any bytes kept as a received history are read, bounded, recorded on and sent on without a
// panic; what reads back reads back the same after sending it on.
func FuzzHistoryFromDeflated(f *testing.F) {
	var h History
	for i := range 300 {
		h = h.With(numbered(i), 0)
	}
	d, n, _ := h.AppendDeflated(nil)
	f.Add(d, n, 7)
	f.Add(finalBlock, 0, 0)
	f.Add([]byte{0, 0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff}, 1, 3)
	f.Fuzz(func(t *testing.T, data []byte, events, max int) {
		events, max = events%100000, max%1000
		got, err := HistoryFromDeflated(slices.Clone(data), events, 3)
		if err != nil {
			return
		}
		evs, readErr := got.Read()
		if readErr == nil && len(evs) != events {
			t.Fatalf("%d events read, %d said", len(evs), events)
		}
		_ = got.Events()
		more := got.With(numbered(1), max)
		d, n, dr := more.AppendDeflated(nil)
		again, err := HistoryFromDeflated(d, n, dr)
		if err != nil {
			t.Fatalf("sent on, refused: %v", err)
		}
		if readErr == nil {
			if a, b := again.Events(), more.Events(); !reflect.DeepEqual(a, b) {
				t.Fatalf("sent on: %d events, want %d", len(a), len(b))
			}
		}
	})
}

// BenchmarkReceivedAtBound is a member receiving 10,000 events at its bound and recording one
// more, from the blocks a snapshot carries and from the one stream of earlier snapshots, which
// the first drop inflates and splits whole.
func BenchmarkReceivedAtBound(b *testing.B) {
	const max = 10000
	var h History
	for i := range max {
		h = h.With(numbered(i), max)
	}
	blocks, dropped := h.DeflatedBlocks()
	deflated, events, _ := h.AppendDeflated(nil)
	b.Run("blocks", func(b *testing.B) {
		for b.Loop() {
			got, err := HistoryFromBlocks(blocks, dropped)
			if err != nil {
				b.Fatal(err)
			}
			got.With(numbered(max), max)
		}
	})
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			got, err := HistoryFromDeflated(deflated, events, dropped)
			if err != nil {
				b.Fatal(err)
			}
			got.With(numbered(max), max)
		}
	})
}

// BenchmarkRecordAtBound is a member at its bound of 10,000 events recording one more, as it
// does at each change it applies: the events since the newest block are not copied.
func BenchmarkRecordAtBound(b *testing.B) {
	const max = 10000
	var h History
	for i := range max + max/2 {
		h = h.With(numbered(i), max)
	}
	i := max + max/2
	for b.Loop() {
		h = h.With(numbered(i), max)
		i++
	}
}

// BenchmarkSnapshotAtBound is a leader at its bound of 10,000 events recording one more and
// making the blocks of a snapshot of them, as it does for each member that joins (the newest
// events written again; every block compressed once, and then shared).
func BenchmarkSnapshotAtBound(b *testing.B) {
	const max = 10000
	var h History
	for i := range max + max/2 {
		h = h.With(numbered(i), max)
	}
	h.DeflatedBlocks()
	i, size := max+max/2, 0
	for b.Loop() {
		h = h.With(numbered(i), max)
		i++
		blocks, _ := h.DeflatedBlocks()
		for _, bl := range blocks {
			size += len(bl.Deflated)
		}
	}
	b.ReportMetric(float64(size)/float64(b.N), "B/snapshot")
}

// Only the oldest block may skip events, and fewer than it holds: anything else a peer sends is
// refused at receive.
func TestHistoryBlocksSkip(t *testing.T) {
	z := appendFlushed(nil, appendRecords(nil, []Event{numbered(1), numbered(2)}), blockWriters)
	for _, tc := range []struct {
		name   string
		blocks []DeflatedBlock
		ok     bool
	}{
		{"first skips one", []DeflatedBlock{{Events: 2, Skip: 1, Deflated: z}, {Events: 2, Deflated: z}}, true},
		{"first skips all", []DeflatedBlock{{Events: 2, Skip: 2, Deflated: z}}, false},
		{"first skips more", []DeflatedBlock{{Events: 2, Skip: 3, Deflated: z}}, false},
		{"negative", []DeflatedBlock{{Events: 2, Skip: -1, Deflated: z}}, false},
		{"second skips", []DeflatedBlock{{Events: 2, Deflated: z}, {Events: 2, Skip: 1, Deflated: z}}, false},
		{"skips more than dropped", []DeflatedBlock{{Events: 9, Skip: 6, Deflated: z}}, false},
	} {
		h, err := HistoryFromBlocks(tc.blocks, 5)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err != nil {
			continue
		}
		if evs, err := h.Read(); err != nil || h.Len() != 3 || len(evs) != 3 || evs[0].RaftIndex != 2 || h.Total() != 8 {
			t.Fatalf("%s: %d events %+v, total %d, %v", tc.name, h.Len(), evs, h.Total(), err)
		}
	}
}

// An oldest block that skips events and does not read back is given whole in the one stream of
// the earlier snapshots, its skipped events no longer counted as dropped: the member reading it
// holds as many events, numbered the same, and refuses them the same.
func TestHistoryDamagedSkipped(t *testing.T) {
	var h History
	for i := range 1000 {
		h = h.With(numbered(i), 600)
	}
	blocks, dropped := h.DeflatedBlocks()
	skip := blocks[0].Skip
	if skip == 0 {
		t.Fatal("the bound left no events of the oldest block dropped")
	}
	blocks[0].Deflated = slices.Clone(blocks[0].Deflated[:len(blocks[0].Deflated)/2])
	got, err := HistoryFromBlocks(blocks, dropped)
	if err != nil {
		t.Fatal(err)
	}
	d, events, dr := got.AppendDeflated(nil)
	if events != got.Len()+skip || dr != dropped-uint64(skip) {
		t.Fatalf("the one stream holds %d events after %d dropped, want %d after %d", events, dr, got.Len()+skip, dropped-uint64(skip))
	}
	again, err := HistoryFromDeflated(d, events, dr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Read(); err == nil || again.Total() != got.Total() {
		t.Fatalf("read back: %v, %d recorded, want an error and %d", err, again.Total(), got.Total())
	}
}

// The blocks of one snapshot inflate to at most maxInflated together, as its one stream did: a
// peer's snapshot of many small blocks that inflate to much more is refused when read, not made
// in memory block by block. (Shown with a smaller budget: the blocks share the one given.)
func TestHistoryInflateBound(t *testing.T) {
	h, err := HistoryFromBlocks([]DeflatedBlock{{Events: 1, Deflated: []byte{0}}, {Events: 2, Deflated: []byte{0}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b := h.blocks; b[0].budget == nil || b[0].budget != b[1].budget || b[0].budget.Load() != maxInflated {
		t.Fatal("the blocks of one snapshot do not share one budget of maxInflated")
	}
	const size = 1 << 16
	bomb := appendFlushed(nil, make([]byte, size), blockWriters)
	budget := new(atomic.Int64)
	budget.Store(3*size + size/2)
	for i := range 5 {
		_, err := (&block{n: 1, deflated: bomb, budget: budget}).inflate()
		if (err == nil) != (i < 3) || (err != nil && !errors.Is(err, errInflated)) {
			t.Fatalf("block %d of %d bytes, budget %d: %v", i, size, 3*size+size/2, err)
		}
	}
}
