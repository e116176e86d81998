package server

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"

	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
)

// debugHandler is etcd's HTTP endpoints, served on --listen-metrics-urls and on the HTTP half of
// the client URLs: /health always, and Go's profiles under /debug/pprof/ with withPprof, which
// is --enable-pprof on the metrics URLs and never on the client URLs (etcd serves them there
// too, to any client).
func debugHandler(node *raftnode.Node, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		// etcd's /health body and reason, so probes written for etcd work unchanged.
		body := struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}{Health: "true"}
		code := http.StatusOK
		if node.Leader() == 0 {
			body.Health, body.Reason, code = "false", "RAFT NO LEADER", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
