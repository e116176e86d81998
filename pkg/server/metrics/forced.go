package metrics

import "github.com/prometheus/client_golang/prometheus"

func newForcedOut() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "clusterd",
		Subsystem: "membership",
		Name:      "forced_out",
		Help:      "1 while a voter of this member's membership answers that --force-new-cluster removed this member and a majority of the voters does not confirm the removal: two clusters may answer under one cluster ID.",
	})
}

// ForcedOut sets what the member's last removal check found: whether a voter of its membership
// answered that it forced a new cluster without this member, unconfirmed by a majority. Set by
// that check, not read from State: the finding is a peer's answer, which the node does not hold.
func (m *Metrics) ForcedOut(found bool) {
	if m == nil {
		return
	}
	m.forcedOut.Set(boolValue(found))
}
