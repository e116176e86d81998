package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

func newPeerRefused(f promauto.Factory) prometheus.Counter {
	return f.NewCounter(prometheus.CounterOpts{
		Name: "clusterd_network_peer_refused_messages_total",
		Help: "The total number of raft messages from the peer port refused before raft saw them: absurd for raft, or not decodable.",
	})
}

// PeerRefused counts one raft message from the peer port that the member refused before raft
// saw it (raftnode's Step: a term or index no cluster reaches, a type no peer sends, a snapshot
// or entry that does not decode). Unlabelled: the sender of a refused message is no member to
// name, and the log line says which message and why.
func (m *Metrics) PeerRefused() {
	if m == nil {
		return
	}
	m.peerRefused.Inc()
}
