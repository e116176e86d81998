package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one member's metrics and its registry. Create it with New before the member's
// parts, hand it to each of them, and point it at the member's state with ReadStateFrom once
// the node exists.
type Metrics struct {
	reg   *prometheus.Registry
	state *stateCollector

	// lastLeader is the leader the Ready loop last reported, for leader_changes_seen_total.
	lastLeader atomic.Uint64

	leaderChanges    prometheus.Counter
	proposalsPending prometheus.Gauge
	proposalsFailed  prometheus.Counter

	peerSentBytes     *prometheus.CounterVec
	peerReceivedBytes *prometheus.CounterVec
	peerSentFailures  *prometheus.CounterVec
	peerRoundTrip     *prometheus.HistogramVec
	peerRefused       prometheus.Counter
	forcedOut         prometheus.Gauge

	backendCommit prometheus.Histogram

	changes  *prometheus.CounterVec
	refusals *prometheus.CounterVec

	grpc *grpcprom.ServerMetrics
}

// Options tunes New. The zero value is what clusterd uses.
type Options struct {
	// Now is the clock for the unstarted-member durations; time.Now when nil. Tests set it.
	Now func() time.Time
	// NoProcessCollector leaves out the process_* metrics. Only for tests that compare a whole
	// scrape: the process collector reads /proc, whose values change between two scrapes.
	NoProcessCollector bool
}

// New returns the metrics of one member, every metric registered on a registry of its own.
func New(opts Options) *Metrics {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	m := &Metrics{reg: prometheus.NewRegistry()}
	// The event metrics are registered as they are made; the collectors below.
	f := promauto.With(m.reg)
	m.initEtcd(f)
	m.initMembership(f)
	m.peerRefused = newPeerRefused(f)
	m.grpc = newGRPCMetrics()
	m.state = newStateCollector(now)
	// etcd registers on Prometheus's default registry, which carries the Go and process collectors.
	m.reg.MustRegister(m.grpc, m.state, collectors.NewGoCollector())
	if !opts.NoProcessCollector {
		m.reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the registry in Prometheus's text format (or OpenMetrics when the scraper asks
// for it), for /metrics on the client listeners and on --listen-metrics-urls. A collector that
// fails (the process collector without /proc) leaves out its own metrics and not the others:
// an SRE paged for no leader needs etcd_server_has_leader more than a clean error.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry is the registry itself, for tests and for a part that has metrics of its own to add.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}
