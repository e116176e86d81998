package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/sdnotify"
)

// withMetrics serves /metrics from m and everything else from next, for --listen-metrics-urls
// and the HTTP/1 half of the plain client URLs (portmux; docs/metrics.md).
func withMetrics(next http.Handler, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("/", next)
	return mux
}

// readyWhenJoined tells systemd READY=1 (notify: sdnotify.FromEnv() in a process systemd
// started) once the member has joined the cluster and applied its membership
// (raftnode.WaitJoined), and not before: systemd starts the unit's dependents then. Call it after
// the client listeners are open and their servers started: a client that connects once READY is
// sent is then accepted. It returns when READY is sent, or when ctx ends or the node stops first,
// without sending it. onReady (Config.OnReady) is called then, whether systemd hears or not.
func readyWhenJoined(ctx context.Context, node *raftnode.Node, notify *sdnotify.Notifier, onReady func(), log *slog.Logger) {
	if err := node.WaitJoined(ctx); err != nil {
		return
	}
	if onReady != nil {
		onReady()
	}
	if err := notify.Ready(); err != nil {
		log.Warn("cannot tell systemd the member is ready", "err", err)
		return
	}
	log.Info("joined the cluster and applied its membership: ready")
}
