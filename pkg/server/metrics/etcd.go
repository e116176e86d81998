package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// The event metrics etcd defines, copied from etcd 3.7's sources (server/etcdserver/metrics.go,
// server/etcdserver/api/rafthttp/metrics.go, server/storage/backend/metrics.go): names, help
// texts, label names (capitalised To and From included) and buckets are etcd's, character for
// character, because dashboards and alert rules match on them. The state gauges are in
// state.go.
func (m *Metrics) initEtcd(f promauto.Factory) {
	m.leaderChanges = f.NewCounter(prometheus.CounterOpts{
		Name: "etcd_server_leader_changes_seen_total",
		Help: "The number of leader changes seen.",
	})
	m.proposalsPending = f.NewGauge(prometheus.GaugeOpts{
		Name: "etcd_server_proposals_pending",
		Help: "The current number of pending proposals to commit.",
	})
	m.proposalsFailed = f.NewCounter(prometheus.CounterOpts{
		Name: "etcd_server_proposals_failed_total",
		Help: "The total number of failed proposals seen.",
	})
	m.peerSentBytes = f.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_network_peer_sent_bytes_total",
		Help: "The total number of bytes sent to peers.",
	}, []string{"To"})
	m.peerReceivedBytes = f.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_network_peer_received_bytes_total",
		Help: "The total number of bytes received from peers.",
	}, []string{"From"})
	m.peerSentFailures = f.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_network_peer_sent_failures_total",
		Help: "The total number of send failures from peers.",
	}, []string{"To"})
	m.peerRoundTrip = f.NewHistogramVec(prometheus.HistogramOpts{
		Name: "etcd_network_peer_round_trip_time_seconds",
		Help: "Round-Trip-Time histogram between peers",
		// etcd's: 0.1 ms doubling to 3.2768 s, 16 buckets.
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"To"})
	m.backendCommit = f.NewHistogram(prometheus.HistogramOpts{
		Name: "etcd_disk_backend_commit_duration_seconds",
		Help: "The latency distributions of commit called by backend.",
		// etcd's: 1 ms doubling to 8.192 s, 14 buckets.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
}

// ObserveLeader records the leader raft reports, from the Ready loop's first step whenever the
// Ready carries a SoftState. As etcd counts: a change is seen when there is a leader and it is
// not the one last reported, so a leader re-elected after a leaderless spell counts again.
// has_leader and is_leader are not set here: they are read from the State at each scrape.
func (m *Metrics) ObserveLeader(lead uint64) {
	if m == nil {
		return
	}
	if old := m.lastLeader.Swap(lead); lead != 0 && lead != old {
		m.leaderChanges.Inc()
	}
}

// ProposalStarted counts a proposal this member makes and waits for (etcd's
// proposals_pending); call the function it returns once, when the wait ends, with the wait's
// own failure: not proposed, not applied in time, lost, or the node stopped. An entry that was
// applied with a membership refusal is not a failed proposal (etcd counts it the same way), so
// pass nil for it.
func (m *Metrics) ProposalStarted() (done func(err error)) {
	if m == nil {
		return func(error) {}
	}
	m.proposalsPending.Inc()
	return func(err error) {
		m.proposalsPending.Dec()
		if err != nil {
			m.proposalsFailed.Inc()
		}
	}
}

// PeerSent adds n bytes sent to the peer to: the size of each raft message (its envelope
// included) once the stream has accepted it.
func (m *Metrics) PeerSent(to uint64, n int) {
	if m == nil {
		return
	}
	m.peerSentBytes.WithLabelValues(idLabel(to)).Add(float64(n))
}

// PeerReceived adds n bytes received from the peer from, for each envelope the receiver took.
func (m *Metrics) PeerReceived(from uint64, n int) {
	if m == nil {
		return
	}
	m.peerReceivedBytes.WithLabelValues(idLabel(from)).Add(float64(n))
}

// PeerSendFailed counts one message to the peer to that was dropped: the queue was full or the
// stream failed (what the transport reports to raft as unreachable).
func (m *Metrics) PeerSendFailed(to uint64) {
	if m == nil {
		return
	}
	m.peerSentFailures.WithLabelValues(idLabel(to)).Inc()
}

// PeerRoundTrip records one round trip to the peer to.
func (m *Metrics) PeerRoundTrip(to uint64, d time.Duration) {
	if m == nil {
		return
	}
	m.peerRoundTrip.WithLabelValues(idLabel(to)).Observe(d.Seconds())
}

// PeerRemoved drops the series of a removed peer. Its ID is never used again, so its series
// would only grow the scrape for the rest of the process's life.
func (m *Metrics) PeerRemoved(id uint64) {
	if m == nil {
		return
	}
	l := idLabel(id)
	m.peerSentBytes.DeleteLabelValues(l)
	m.peerReceivedBytes.DeleteLabelValues(l)
	m.peerSentFailures.DeleteLabelValues(l)
	m.peerRoundTrip.DeleteLabelValues(l)
}

// BackendCommit records one bbolt commit of the Ready loop's persist step. The raft log is in
// the same transaction, so this is also the time an entry takes to become durable: clusterd has
// no separate WAL and so no etcd_disk_wal_fsync_duration_seconds.
func (m *Metrics) BackendCommit(d time.Duration) {
	if m == nil {
		return
	}
	m.backendCommit.Observe(d.Seconds())
}

// idLabel is a member ID as a label value: the form clusterctl prints and the logs carry, so a
// series can be matched to `clusterctl member list` by eye. (etcd's labels have no leading
// zeros; no rule or dashboard depends on the form of an ID.)
func idLabel(id uint64) string { return membership.ID(id).String() }
