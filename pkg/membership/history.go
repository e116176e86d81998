package membership

import (
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxHistory is how many changes a member keeps in its history unless told otherwise
// (clusterd's --max-history): years of a cluster's changes at a replacement a day. A member that
// joins receives the whole history in its first snapshot, and each change copies it, so the
// bound is also what a join and a change pay for (about 100 bytes an event).
const DefaultMaxHistory = 1000

// Origin is who asked for a change: it travels with the Change in the raft entry, so every
// member records the same. Stored as clusterd.v2.Origin (pkg/wire).
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

// IsZero reports an unknown origin.
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

// Event is one applied membership change. Stored and sent as clusterd.v2.Event (pkg/wire).
type Event struct {
	RaftIndex uint64
	Term      uint64
	// Time is when the leader proposed the change, from its clock, carried in the entry; zero
	// for an entry that carries none.
	Time time.Time
	// Change is "add", "add-learner", "remove", "update", "promote" or "publish".
	Change   string
	MemberID ID
	Name     string
	PeerURLs []string
	// IsLearner is the member's role after the change (before it, for a removal).
	IsLearner bool
	By        Origin
}

// Stamp is what the log says about an entry beside its change: where it is, when the leader
// proposed it, and who asked.
type Stamp struct {
	Index, Term uint64
	Time        time.Time
}

// History is the record of applied changes, oldest first: the newest ones kept, and how many
// older ones were dropped. Like IDSet, a History never changes once made: With returns a new one
// with its own copy of the events, so memberships of every age can be read at once. The copy
// costs a change the length of the history, which --max-history bounds (DefaultMaxHistory). The
// zero History is empty.
type History struct {
	events  []Event // never changed once a History holds them
	dropped uint64  // events dropped over the cluster's life
}

// Len is the number of events kept.
func (h History) Len() int { return len(h.events) }

// Dropped is the number of older events dropped to keep the history bounded.
func (h History) Dropped() uint64 { return h.dropped }

// Total is the number of events ever recorded: the sequence number the next one gets.
func (h History) Total() uint64 { return h.dropped + uint64(len(h.events)) }

// IsZero reports an empty history.
func (h History) IsZero() bool { return len(h.events) == 0 && h.dropped == 0 }

// Events returns the events kept, oldest first. The slice is shared: the caller must not change
// it or the events' URL lists.
func (h History) Events() []Event { return h.events }

// Newest returns the newest k events kept (all when fewer), oldest first, shared as Events'.
func (h History) Newest(k int) []Event {
	return h.events[len(h.events)-max(0, min(k, len(h.events))):]
}

// Last returns the newest event kept.
func (h History) Last() (Event, bool) {
	if len(h.events) == 0 {
		return Event{}, false
	}
	return h.events[len(h.events)-1], true
}

// RemovalOf returns the event that removed member id, if the history still holds it.
func (h History) RemovalOf(id ID) (Event, bool) {
	for i := len(h.events) - 1; i >= 0; i-- {
		if ev := h.events[i]; ev.MemberID == id && ev.Change == KindRemove.String() {
			return ev, true
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
	if len(evs) == 0 {
		return h.bounded(max)
	}
	all := make([]Event, 0, len(h.events)+len(evs))
	h.events = append(append(all, h.events...), evs...)
	return h.bounded(max)
}

// bounded drops the oldest events beyond max (none when max is not positive). The events kept
// stay shared: a History never changes its events, and the next With copies them.
func (h History) bounded(max int) History {
	if over := len(h.events) - max; max > 0 && over > 0 {
		h.events = h.events[over:]
		h.dropped += uint64(over)
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
	h.events = h.events[min(dropped-h.dropped, uint64(len(h.events))):]
	h.dropped = dropped
	return h
}

// NewHistory returns a history of events (oldest first) after dropped older ones, bounded by
// max as With bounds it. It keeps events: give it a slice of its own.
func NewHistory(events []Event, dropped uint64, max int) History {
	return History{events: events, dropped: dropped}.bounded(max)
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
	name := ch.Kind.String()
	if ch.Kind == KindAdd && m.IsLearner {
		name = "add-learner"
	}
	ev := Event{
		RaftIndex: st.Index, Term: st.Term, Time: st.Time, Change: name,
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
