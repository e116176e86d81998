package transport

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// Bytes are counted on both ends as the envelopes' size, a message that cannot be queued is a
// send failure, and a removed peer's series go with it.
func TestPeerMetrics(t *testing.T) {
	c := membership.NewCluster(7, nil)
	recvM, sendM := metrics.New(metrics.Options{NoProcessCollector: true}), metrics.New(metrics.Options{NoProcessCollector: true})
	_, receiver, url := serveWithMetrics(t, 2, 7, c, recvM)
	sender, _, _ := serveWithMetrics(t, 1, 7, c, sendM)
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))
	sender.Send([]*raftpb.Message{heartbeat(1, 2), heartbeat(1, 2), heartbeat(1, 3)})
	waitFor(t, "delivery", func() bool { return receiver.count() == 2 })

	want := float64(2 * proto.Size(&pb.Envelope{ClusterId: 7, From: 1, To: 2, Message: heartbeat(1, 2)}))
	to2, from1, to3 := membership.ID(2).String(), membership.ID(1).String(), membership.ID(3).String()
	waitFor(t, "the sent bytes", func() bool { return series(t, sendM, "etcd_network_peer_sent_bytes_total", to2) == want })
	if got := series(t, recvM, "etcd_network_peer_received_bytes_total", from1); got != want {
		t.Errorf("received bytes from 1 = %v, want %v", got, want)
	}
	if got := series(t, sendM, "etcd_network_peer_sent_failures_total", to3); got != 1 {
		t.Errorf("send failures to 3 (no such peer) = %v, want 1", got)
	}

	gone := membership.NewCluster(7, nil)
	gone.Removed = membership.NewIDSet(2)
	sender.SetPeers(gone)
	if got := series(t, sendM, "etcd_network_peer_sent_bytes_total", to2); got != -1 {
		t.Errorf("a removed peer's sent bytes are still exposed (%v)", got)
	}
}

// series is the value of the series of name whose only label has the value label, -1 if none.
func series(t *testing.T, m *metrics.Metrics, name, label string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() == label {
				return s.GetCounter().GetValue()
			}
		}
	}
	return -1
}
