package transport

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// servePeerCounting starts a transport for member 2 of cluster 7 whose server counts the
// probes it answers.
func servePeerCounting(t *testing.T, probes *atomic.Int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := New(Config{LocalID: 2, ClusterID: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tr.Attach(&member{cluster: membership.NewCluster(7, nil)})
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == pb.Peer_Probe_FullMethodName {
			probes.Add(1)
		}
		return h(ctx, req)
	}))
	tr.Register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); tr.Close() })
	return "http://" + l.Addr().String()
}

// Each peer's round trip is observed, with etcd's buckets, every interval; a removed peer is
// probed no more and its series is gone; Close ends the probers.
func TestProbeRoundTrip(t *testing.T) {
	var probes atomic.Int64
	url := servePeerCounting(t, &probes)
	m := metrics.New(metrics.Options{NoProcessCollector: true})
	const interval = 20 * time.Millisecond
	sender := New(Config{LocalID: 1, ClusterID: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m, ProbeInterval: interval})
	sender.Attach(&member{cluster: membership.NewCluster(7, nil)})
	defer sender.Close()
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}}))

	to2 := membership.ID(2).String()
	waitFor(t, "three observed round trips", func() bool { return roundTrips(t, m, to2).GetSampleCount() >= 3 })
	h := roundTrips(t, m, to2)
	if mean := h.GetSampleSum() / float64(h.GetSampleCount()); mean <= 0 || mean > 1 {
		t.Errorf("mean round trip on loopback %v s", mean)
	}
	if b := h.GetBucket(); len(b) != 16 || b[0].GetUpperBound() != 0.0001 || b[15].GetUpperBound() != 3.2768 {
		t.Errorf("buckets are not etcd's (0.1 ms doubling to 3.2768 s): %v", b)
	}

	gone := membership.NewCluster(7, nil)
	gone.Removed = membership.NewIDSet(2)
	sender.SetPeers(gone)
	time.Sleep(2 * interval) // a probe in flight at the removal ends meanwhile
	before := probes.Load()
	time.Sleep(10 * interval)
	if after := probes.Load(); after != before {
		t.Errorf("%d probes reached the removed peer after its removal", after-before)
	}
	if h := roundTrips(t, m, to2); h != nil {
		t.Errorf("the removed peer's round trips are still exposed: %v", h)
	}
}

// A peer that cannot be reached is never observed, and Close does not wait for it.
func TestProbeUnreachable(t *testing.T) {
	dead := refusedURL(t)
	m := metrics.New(metrics.Options{NoProcessCollector: true})
	sender := New(Config{LocalID: 1, ClusterID: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: m, ProbeInterval: 10 * time.Millisecond})
	sender.Attach(&member{cluster: membership.NewCluster(7, nil)})
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{dead}}}))
	time.Sleep(100 * time.Millisecond)
	if h := roundTrips(t, m, membership.ID(2).String()); h != nil {
		t.Errorf("an unreachable peer has round trips: %v", h)
	}
	start := time.Now()
	sender.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}

// roundTrips is the round-trip histogram of the peer to, nil if it has none.
func roundTrips(t *testing.T, m *metrics.Metrics, to string) *dto.Histogram {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "etcd_network_peer_round_trip_time_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() == to {
				return s.GetHistogram()
			}
		}
	}
	return nil
}

// A member's probe to a peer that removed it is refused as removed, and the refusal is a claim
// to check (RemovalClaims), as a refused raft stream is: a member raft has nothing to send for
// hears it all the same. A member's probe is answered.
func TestProbeRefusedAsRemovedIsAClaim(t *testing.T) {
	c := membership.NewCluster(7, []*membership.Member{{ID: 1, PeerURLs: []string{"http://127.0.0.1:1"}}})
	c.Removed = membership.NewIDSet(3)
	_, _, url := serve(t, 2, 7, c)
	peers := membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{url}}})
	probeFrom := func(id membership.ID) *Transport {
		tr := New(Config{LocalID: id, ClusterID: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Metrics: metrics.New(metrics.Options{NoProcessCollector: true}), ProbeInterval: 20 * time.Millisecond})
		tr.Attach(&member{cluster: membership.NewCluster(7, nil)})
		t.Cleanup(tr.Close)
		tr.SetPeers(peers)
		return tr
	}
	select {
	case <-probeFrom(3).RemovalClaims():
	case <-time.After(10 * time.Second):
		t.Fatal("a probe refused as a removed member's made no claim")
	}
	member := probeFrom(1)
	waitFor(t, "a member's probe answered", func() bool { return roundTrips(t, member.cfg.Metrics, membership.ID(2).String()).GetSampleCount() >= 2 })
	select {
	case <-member.RemovalClaims():
		t.Fatal("a member's answered probe made a removal claim")
	default:
	}
}
