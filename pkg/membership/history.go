package membership

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultMaxHistory is how many changes a member keeps in its history unless told otherwise
// (clusterd's --max-history).
const DefaultMaxHistory = 10000

// Origin is who asked for a change: it travels with the Change in the raft entry, so every
// member records the same. Stored as JSON (raft log, bbolt, snapshots): never rename a tag.
type Origin struct {
	// CN is the common name of the client certificate the client port verified; empty without
	// client certificate authentication.
	CN string `json:"cn,omitempty"`
	// Address is the client's address as the member it called saw it (host:port).
	Address string `json:"address,omitempty"`
	// Via is the clusterctl command that made the change, as its client said (a label, not a
	// proof: CN and Address are what the member verified or saw).
	Via string `json:"via,omitempty"`
	// Clusterd names a change clusterd made itself: OriginPublish, OriginForceNewCluster.
	Clusterd string `json:"clusterd,omitempty"`
}

// The changes clusterd makes itself. Stored: never rename.
const (
	OriginPublish         = "publish"
	OriginForceNewCluster = "force-new-cluster"
)

// IsZero reports an unknown origin: a change from an older version's log.
func (o Origin) IsZero() bool { return o == Origin{} }

// String is the origin as people and scripts read it (docs/output.md): space-separated
// key=value pairs in a fixed order, a value quoted when it holds a space, a quote or nothing
// printable; "" for an unknown origin.
func (o Origin) String() string {
	var parts []string
	for _, kv := range [][2]string{{"clusterd", o.Clusterd}, {"cn", o.CN}, {"address", o.Address}, {"via", o.Via}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+quoteIfNeeded(kv[1]))
		}
	}
	return strings.Join(parts, " ")
}

func quoteIfNeeded(s string) string {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r > '~' {
			return strconv.Quote(s)
		}
	}
	return s
}

// Event is one applied membership change. Stored as JSON (bbolt, snapshots): never rename a tag.
type Event struct {
	RaftIndex uint64 `json:"raftIndex"`
	Term      uint64 `json:"term"`
	// Time is when the leader proposed the change, from its clock, carried in the entry; zero
	// for an entry an older version wrote.
	Time time.Time `json:"time,omitzero"`
	// Change is "add", "add-learner", "remove", "update", "promote" or "publish".
	Change   string   `json:"change"`
	MemberID ID       `json:"memberID"`
	Name     string   `json:"name,omitempty"`
	PeerURLs []string `json:"peerURLs,omitempty"`
	// IsLearner is the member's role after the change (before it, for a removal).
	IsLearner bool   `json:"isLearner,omitempty"`
	By        Origin `json:"by,omitzero"`
}

// Stamp is what the log says about an entry beside its change: where it is, when the leader
// proposed it, and who asked.
type Stamp struct {
	Index, Term uint64
	Time        time.Time
}

// History is the record of applied changes, oldest first: the newest ones kept, and how many
// older ones were dropped. Like IDSet, a History never changes once made: With returns a new one
// that shares the old one's blocks, and holds only the few events recorded lately as events, in
// an array shared with the history it was made from (recentArray): recording costs neither a
// copy of the whole history nor of those events, and memberships of every age can be read at
// once. The zero History is empty.
//
// Most of a history is its base: blocks of events (history_block.go), each kept as its binary
// records (history_binary.go) and compressed, as a snapshot carries them. A block never changes
// once made: recording makes a new block of blockEvents events when the recent ones fill it
// (compressed once, when a snapshot first holds it), dropping at the bound drops a whole oldest
// block once none of it is kept (until then skip hides its dropped events), and making a
// snapshot shares the blocks' compressed bytes. A member that receives thousands of events in
// its first snapshot keeps each block compressed as it came, and inflates one only when it is
// read: a new member's way to ready, and its next change at the bound, do not depend on how long
// the history is beyond moving its bytes.
type History struct {
	blocks  []*block     // shared between histories, never changed
	based   int          // events in blocks
	skip    int          // events at the start of blocks[0] that this history has dropped
	recent  []Event      // this history's own events since its newest block was made
	tail    *recentArray // recent's array, shared along a line of histories (appendRecent)
	dropped uint64       // events dropped over the cluster's life
}

// Len is the number of events kept.
func (h History) Len() int { return h.based - h.skip + len(h.recent) }

// Dropped is the number of older events dropped to keep the history bounded.
func (h History) Dropped() uint64 { return h.dropped }

// Total is the number of events ever recorded: the sequence number the next one gets.
func (h History) Total() uint64 { return h.dropped + uint64(h.Len()) }

// IsZero reports an empty history, so that JSON leaves it out (omitzero).
func (h History) IsZero() bool { return h.Len() == 0 && h.dropped == 0 }

// Events returns the events kept, oldest first, leaving out those of a damaged block (see
// Read). The slice is the caller's; the events' URL lists are shared and must not be changed.
func (h History) Events() []Event { return h.Newest(h.Len()) }

// Read returns the events kept, oldest first, or the error of a block that does not read back
// (compressed records damaged in a snapshot or on disk): what a client is answered.
func (h History) Read() ([]Event, error) { return h.ReadNewest(h.Len()) }

// Newest returns the newest k events kept (all when fewer), oldest first, decoding only those
// and leaving out those of a damaged block.
func (h History) Newest(k int) []Event {
	evs, _ := h.readNewest(k, false)
	return evs
}

// ReadNewest is Newest, or the error of a damaged block it would read.
func (h History) ReadNewest(k int) ([]Event, error) { return h.readNewest(k, true) }

func (h History) readNewest(k int, strict bool) ([]Event, error) {
	k = max(0, min(k, h.Len()))
	fromBase := k - min(k, len(h.recent))
	// The blocks that hold the newest fromBase events of the base, oldest first.
	first, inFirst := len(h.blocks), 0
	for n := 0; n < fromBase; {
		first--
		inFirst = min(h.blocks[first].n, fromBase-n)
		n += inFirst
	}
	// The blocks are read (and so checked) before anything is made for their events: a count a
	// snapshot gave for a block is only a claim until its records are read, and a claim of
	// millions must not size a slice.
	type part struct {
		r    *records
		from int
	}
	parts := make([]part, 0, len(h.blocks)-first)
	recent := h.recent[len(h.recent)-min(k, len(h.recent)):]
	n := len(recent)
	for i := first; i < len(h.blocks); i++ {
		r, err := h.blocks[i].records()
		if err != nil {
			if strict {
				return nil, err
			}
			continue
		}
		from := 0
		if i == first {
			from = r.len() - inFirst
		}
		parts = append(parts, part{r, from})
		n += r.len() - from
	}
	out := make([]Event, 0, n)
	for _, p := range parts {
		for j := p.from; j < p.r.len(); j++ {
			out = append(out, p.r.event(j))
		}
	}
	return append(out, recent...), nil
}

// Last returns the newest event kept.
func (h History) Last() (Event, bool) {
	if n := h.Newest(1); len(n) == 1 {
		return n[0], true
	}
	return Event{}, false
}

// RemovalOf returns the event that removed member id, if the history still holds it. It reads
// the events newest first and stops at the removal, decoding one event at a time: a member asks
// for its own removal just after it, and the member answering may be electing a leader meanwhile.
func (h History) RemovalOf(id ID) (Event, bool) {
	match := func(ev Event) bool { return ev.MemberID == id && ev.Change == KindRemove.String() }
	for i := len(h.recent) - 1; i >= 0; i-- {
		if match(h.recent[i]) {
			return h.recent[i], true
		}
	}
	for b := len(h.blocks) - 1; b >= 0; b-- {
		r, err := h.blocks[b].records()
		if err != nil {
			continue // damaged: left out, as Events leaves it out
		}
		first := 0
		if b == 0 {
			first = h.skip
		}
		for j := r.len() - 1; j >= first; j-- {
			if ev := r.event(j); match(ev) {
				return ev, true
			}
		}
	}
	return Event{}, false
}

// With returns the history with ev recorded and, when max is positive, only the newest max
// events kept; h is unchanged.
func (h History) With(ev Event, max int) History {
	return h.WithEvents([]Event{ev}, max)
}

// WithEvents returns the history with evs recorded, oldest first, and, when max is positive,
// only the newest max events kept; h is unchanged.
func (h History) WithEvents(evs []Event, max int) History {
	h.recent, h.tail = h.appendRecent(evs)
	return h.bounded(max)
}

// recentArray is the array behind the recent events of a line of histories, each made from the
// one before by With: each holds a longer prefix of the same slots. used counts the slots
// claimed. The history whose recent events end at used claims the next slots and writes its
// new events there, so that recording does not copy the recent events each time; any other
// (a history recorded again after another was made from it) finds the slots claimed and copies.
// No slot is written after it is claimed, so every history's events stay as they were.
type recentArray struct {
	size int // the array's length: a history's recent events start at size - cap(recent)
	used atomic.Int64
}

// appendRecent returns the recent events with evs after them, and the array they are in.
func (h History) appendRecent(evs []Event) ([]Event, *recentArray) {
	if len(evs) == 0 {
		return h.recent, h.tail
	}
	if t := h.tail; t != nil && cap(h.recent)-len(h.recent) >= len(evs) {
		end := int64(t.size - cap(h.recent) + len(h.recent))
		if t.used.CompareAndSwap(end, end+int64(len(evs))) {
			return append(h.recent, evs...), t
		}
	}
	n := len(h.recent) + len(evs)
	recent := make([]Event, n, max(n, blockEvents))
	copy(recent[copy(recent, h.recent):], evs)
	t := &recentArray{size: cap(recent)}
	t.used.Store(int64(n))
	return recent, t
}

// bounded drops the oldest events beyond max, drops the blocks none of whose events are kept,
// and folds the recent events into new blocks of blockEvents. A block received whole (larger
// than blockEvents) is split into blocks of blockEvents once the bound reaches it (inflated then,
// each part compressed when a snapshot first holds it), so that the dropped events a snapshot
// still carries in its oldest block stay fewer than a block's.
func (h History) bounded(max int) History {
	if over := h.Len() - max; max > 0 && over > 0 {
		h.skip += over
		h.dropped += uint64(over)
	}
	for len(h.blocks) > 0 && h.skip >= h.blocks[0].n {
		h.skip -= h.blocks[0].n
		h.based -= h.blocks[0].n
		h.blocks = h.blocks[1:]
	}
	if len(h.blocks) == 0 && h.skip > 0 {
		h.recent, h.skip = h.recent[h.skip:], 0
	}
	if h.skip > 0 && h.blocks[0].n > blockEvents {
		if r, err := h.blocks[0].records(); err == nil {
			split := splitBlocks(r.from(h.skip), r.len()-h.skip)
			h.based -= h.blocks[0].n - (r.len() - h.skip)
			h.blocks, h.skip = append(split, h.blocks[1:]...), 0
		}
	}
	for len(h.recent) >= blockEvents {
		h.blocks = append(slices.Clip(h.blocks), newBlock(appendRecords(nil, h.recent[:blockEvents]), blockEvents))
		h.based += blockEvents
		h.recent = h.recent[blockEvents:]
	}
	return h
}

// DroppedTo returns h with its events before sequence number dropped (in everything ever
// recorded) dropped, and dropped as its count of dropped events: how a member that kept fewer
// than a snapshot holds reads the snapshot back.
func (h History) DroppedTo(dropped uint64) History {
	if dropped <= h.dropped {
		return h
	}
	h.skip += int(min(dropped-h.dropped, uint64(h.Len())))
	h.dropped = dropped
	return h.bounded(0)
}

// NewHistory returns a history of events (oldest first) after dropped older ones, bounded by
// max as With bounds it.
func NewHistory(events []Event, dropped uint64, max int) History {
	return History{dropped: dropped}.WithEvents(events, max)
}

// historyJSON is how a History travels in JSON (snapshots, peers): the events kept as their
// binary records (history_binary.go) compressed (AppendDeflated), which encoding/json writes in
// base64, their count, and the count dropped. Records holds them uncompressed, as the first
// version of the history wrote them, and Deflated without Events is the second version's: read,
// never written.
type historyJSON struct {
	Deflated []byte `json:"deflated,omitempty"`
	Records  []byte `json:"records,omitempty"`
	Dropped  uint64 `json:"dropped,omitempty"`
	Events   *int   `json:"events,omitempty"`
}

// AppendRecords appends the binary records of the events kept, each preceded by its length
// (uvarint), as the records field of the JSON holds them, leaving out those of a damaged block.
func (h History) AppendRecords(b []byte) []byte {
	for i, bl := range h.blocks {
		r, err := bl.records()
		if err != nil {
			continue
		}
		if i == 0 {
			b = append(b, r.from(h.skip)...)
		} else {
			b = append(b, r.data...)
		}
	}
	return appendRecords(b, h.recent)
}

// HistoryFromRecords is the history of the records AppendRecords wrote, after dropped older
// events. Each record is checked, not decoded (an event is decoded when it is read), and the
// history keeps records: give it bytes of its own.
func HistoryFromRecords(data []byte, dropped uint64) (History, error) {
	if err := checkDropped(dropped); err != nil {
		return History{}, err
	}
	n, err := checkRecords(data)
	if err != nil {
		return History{}, err
	}
	return History{dropped: dropped}.withBlocks(splitBlocks(data, n)), nil
}

// checkDropped refuses a count of dropped events that a history received could not have: one
// so large that the sequence numbers of the events after it, which key them on disk, would wrap.
func checkDropped(dropped uint64) error {
	if dropped > math.MaxInt64 {
		return fmt.Errorf("history records: %d dropped before them", dropped)
	}
	return nil
}

// withBlocks returns h (with no recent events) with blocks added after its own.
func (h History) withBlocks(blocks []*block) History {
	for _, b := range blocks {
		h.based += b.n
	}
	h.blocks = append(slices.Clip(h.blocks), blocks...)
	return h
}

// MarshalJSON writes the events kept and the count dropped as the JSON snapshots of earlier
// versions carry them. clusterd reads that form (UnmarshalJSON) and no longer writes it (its
// snapshots are clusterd.v2.MembershipSnapshot, pkg/storage): the tests write it to stand for
// those versions.
func (h History) MarshalJSON() ([]byte, error) {
	deflated, events, dropped := h.AppendDeflated(nil)
	return json.Marshal(historyJSON{Deflated: deflated, Events: &events, Dropped: dropped})
}

// UnmarshalJSON reads what MarshalJSON writes, and what earlier versions wrote.
func (h *History) UnmarshalJSON(b []byte) error {
	var v historyJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var n History
	var err error
	switch {
	case v.Events != nil:
		n, err = HistoryFromDeflated(v.Deflated, *v.Events, v.Dropped)
	case v.Deflated != nil:
		if v.Records, err = InflateRecords(v.Deflated); err == nil {
			n, err = HistoryFromRecords(v.Records, v.Dropped)
		}
	default:
		n, err = HistoryFromRecords(v.Records, v.Dropped)
	}
	if err != nil {
		return err
	}
	*h = n
	return nil
}

// changeName is how the history names a change of this kind applied to m (as after the change).
func changeName(k Kind, m *Member) string {
	if k == KindAdd && m.IsLearner {
		return "add-learner"
	}
	return k.String()
}

// ApplyRecorded is Apply, and the change recorded in the history of the result at st, keeping
// the newest max events (all when max is zero). A refused change is not recorded: the cluster
// comes back unchanged with Apply's error. Nor is a publish that changes nothing: a member
// publishes at every start, and a restart with the same name and client URLs is no change.
func (c *Cluster) ApplyRecorded(ch Change, st Stamp, max int) (*Cluster, error) {
	n, err := c.Apply(ch)
	if err != nil {
		return c, err
	}
	m := n.Members[ch.Member.ID]
	if ch.Kind == KindPublish && reflect.DeepEqual(m, c.Members[ch.Member.ID]) {
		return n, nil
	}
	if ch.Kind == KindRemove {
		m = c.Members[ch.Member.ID]
	}
	ev := Event{
		RaftIndex: st.Index, Term: st.Term, Time: st.Time, Change: changeName(ch.Kind, m),
		MemberID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner, By: ch.By,
	}
	n.History = c.History.With(ev, max)
	return n, nil
}

// WithMaxHistory returns c with only the newest max events of its history (all when max is
// zero): a member told to keep fewer than the snapshot it received or the data it restarted
// from holds.
func (c *Cluster) WithMaxHistory(max int) *Cluster {
	if max <= 0 || c.History.Len() <= max {
		return c
	}
	n := *c
	n.History = c.History.bounded(max)
	return &n
}
