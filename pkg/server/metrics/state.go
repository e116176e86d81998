package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// State is what the member knows at one moment, read at each scrape for the gauges. The
// server's function that fills it must be safe to call from any goroutine and quick: it runs
// inside the scrape.
type State struct {
	// ID is this member's ID; 0 while a joining member does not know it yet (no etcd_server_id).
	ID uint64
	// Leader is the leader this member sees (raft's SoftState.Lead); 0 for none.
	Leader uint64
	// Learner says this member is a learner in its applied membership.
	Learner bool
	// Committed is raft's commit index (HardState.Commit) and Applied the applied index. etcd
	// exposes these two indexes as proposals_committed_total and proposals_applied_total.
	Committed, Applied uint64
	// Members is the applied membership.
	Members []Member
	// Match is raft's match index of every member, this one included, from raft.Status's
	// Progress: only the leader tracks it, so nil on any other member.
	Match map[uint64]uint64
	// Active says, for every other member, whether this member counts it as live now: by the
	// liveness rule of the strict reconfiguration check (docs/design.md), not by a connection
	// merely open. It is etcd's etcd_network_active_peers, which member prune reads on the
	// leader.
	Active map[uint64]bool
}

// Member is one member of the applied membership, as far as the metrics need it.
type Member struct {
	ID      uint64
	Learner bool
	Started bool
}

// ReadStateFrom makes every later scrape read the member's state through f. Until it is called
// the state is the zero State: no leader, no members.
func (m *Metrics) ReadStateFrom(f func() State) {
	if m == nil {
		return
	}
	m.state.source.Store(&f)
}

// stateCollector turns one State per scrape into the state gauges, etcd's and clusterd's.
type stateCollector struct {
	source atomic.Pointer[func() State]
	now    func() time.Time

	hasLeader, isLeader, isLearner, serverID *prometheus.Desc
	committed, applied                       *prometheus.Desc
	members, learnerLag, unstarted           *prometheus.Desc
	activePeers                              *prometheus.Desc

	// unstartedSince is when a scrape first saw each member that is unstarted now. The
	// membership does not store when a member was added, so the clock starts at the first
	// scrape that sees it (within a scrape interval of the add), or at this process's first
	// scrape for a member that was already unstarted.
	mu             sync.Mutex
	unstartedSince map[uint64]time.Time
}

func newStateCollector(now func() time.Time) *stateCollector {
	// etcd's help texts, character for character (server/etcdserver/metrics.go,
	// server/etcdserver/api/membership/metrics.go), then clusterd's own.
	return &stateCollector{
		now:            now,
		unstartedSince: map[uint64]time.Time{},
		hasLeader: prometheus.NewDesc("etcd_server_has_leader",
			"Whether or not a leader exists. 1 is existence, 0 is not.", nil, nil),
		isLeader: prometheus.NewDesc("etcd_server_is_leader",
			"Whether or not this member is a leader. 1 if is, 0 otherwise.", nil, nil),
		isLearner: prometheus.NewDesc("etcd_server_is_learner",
			"Whether or not this member is a learner. 1 if is, 0 otherwise.", nil, nil),
		serverID: prometheus.NewDesc("etcd_server_id",
			"Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.",
			[]string{"server_id"}, nil),
		// etcd declares these two as gauges although their names end in _total. Both indexes
		// only grow, so here they are counters, read at each scrape: promtool's lint is clean
		// and PromQL treats them alike (rate() works on either). docs/metrics.md.
		committed: prometheus.NewDesc("etcd_server_proposals_committed_total",
			"The total number of consensus proposals committed.", nil, nil),
		applied: prometheus.NewDesc("etcd_server_proposals_applied_total",
			"The total number of consensus proposals applied.", nil, nil),
		activePeers: prometheus.NewDesc("etcd_network_active_peers",
			"The current number of active peer connections.", []string{"Local", "Remote"}, nil),
		members: prometheus.NewDesc("clusterd_membership_members",
			"The number of members in this member's applied membership, by role (voter or learner) and state (started or unstarted).",
			[]string{"role", "state"}, nil),
		learnerLag: prometheus.NewDesc("clusterd_membership_learner_lag_entries",
			"How many log entries each learner is behind the leader's log. Reported by the leader only.",
			[]string{"member_id"}, nil),
		unstarted: prometheus.NewDesc("clusterd_membership_member_unstarted_seconds",
			"How long each unstarted member has been seen unstarted by this member: added but its process has not yet published itself.",
			[]string{"member_id"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hasLeader, c.isLeader, c.isLearner, c.serverID,
		c.committed, c.applied, c.activePeers, c.members, c.learnerLag, c.unstarted} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	var s State
	if f := c.source.Load(); f != nil {
		s = (*f)()
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.hasLeader, boolValue(s.Leader != 0))
	gauge(c.isLeader, boolValue(s.ID != 0 && s.Leader == s.ID))
	gauge(c.isLearner, boolValue(s.Learner))
	if s.ID != 0 {
		gauge(c.serverID, 1, idLabel(s.ID))
	}
	ch <- prometheus.MustNewConstMetric(c.committed, prometheus.CounterValue, float64(s.Committed))
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.CounterValue, float64(s.Applied))
	for id, live := range s.Active {
		if s.ID == 0 {
			break // no Local label to give
		}
		gauge(c.activePeers, boolValue(live), idLabel(s.ID), idLabel(id))
	}

	// All four role and state pairs, zeros included: an alert on unstarted learners must see
	// a 0 rather than no series.
	var counts [2][2]int // [learner][started]
	for _, mb := range s.Members {
		counts[int(boolValue(mb.Learner))][int(boolValue(mb.Started))]++
	}
	for li, role := range []string{"voter", "learner"} {
		for si, state := range []string{"unstarted", "started"} {
			gauge(c.members, float64(counts[li][si]), role, state)
		}
	}

	if s.Match != nil {
		lead := s.Match[s.ID]
		for _, mb := range s.Members {
			if mb.Learner {
				gauge(c.learnerLag, float64(lead-min(lead, s.Match[mb.ID])), idLabel(mb.ID))
			}
		}
	}

	now := c.now()
	for id, since := range c.unstartedFor(s.Members, now) {
		gauge(c.unstarted, now.Sub(since).Seconds(), idLabel(id))
	}
}

// unstartedFor notes the members seen unstarted for the first time, forgets those that started
// or left, and returns when each unstarted member was first seen.
func (c *stateCollector) unstartedFor(members []Member, now time.Time) map[uint64]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[uint64]time.Time, len(c.unstartedSince))
	for _, mb := range members {
		if mb.Started {
			continue
		}
		since, ok := c.unstartedSince[mb.ID]
		if !ok {
			since = now
		}
		seen[mb.ID] = since
	}
	// A new map each scrape, never changed after: the caller reads it without the lock.
	c.unstartedSince = seen
	return seen
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
