package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/sdnotify"
)

// observer is what a member tells the world about itself beside its APIs: its Prometheus
// metrics (docs/metrics.md) and its state to systemd (docs/systemd.md). One per member run: the
// metrics have a registry of their own, so members in one process (the in-process cluster
// tests) do not share series.
type observer struct {
	metrics *metrics.Metrics
	notify  *sdnotify.Notifier
	onReady func() // Config.OnReady
	log     *slog.Logger
}

// newObserver makes the metrics of a member before its parts, which each take them in their
// Config; notify is where readiness goes (sdnotify.FromEnv() in a process systemd started).
func newObserver(notify *sdnotify.Notifier, onReady func(), log *slog.Logger) *observer {
	return &observer{metrics: metrics.New(metrics.Options{}), notify: notify, onReady: onReady, log: log}
}

// watch points the state metrics at the node, once it exists.
func (o *observer) watch(node *raftnode.Node) { o.metrics.ReadStateFrom(node.MetricsState) }

// withMetrics serves /metrics from m and everything else from next, for --listen-metrics-urls
// and the HTTP/1 half of the plain client URLs (portmux; docs/metrics.md).
func withMetrics(next http.Handler, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("/", next)
	return mux
}

// readyWhenJoined tells systemd READY=1 once the member has joined the cluster and applied its
// membership (raftnode.WaitJoined), and not before: systemd starts the unit's dependents then.
// Call it after the client listeners are open and their servers started: a client that connects
// once READY is sent is then accepted. It returns when READY is sent, or when ctx ends or the
// node stops first, without sending it. Config.OnReady is called then, whether systemd hears
// or not.
func (o *observer) readyWhenJoined(ctx context.Context, node *raftnode.Node) {
	if err := node.WaitJoined(ctx); err != nil {
		return
	}
	if o.onReady != nil {
		o.onReady()
	}
	if err := o.notify.Ready(); err != nil {
		o.log.Warn("cannot tell systemd the member is ready", "err", err)
		return
	}
	o.log.Info("joined the cluster and applied its membership: ready")
}

// stopping tells systemd STOPPING=1, as soon as the member begins to shut down.
func (o *observer) stopping() {
	if err := o.notify.Stopping(); err != nil {
		o.log.Warn("cannot tell systemd the member is stopping", "err", err)
	}
}
