package raftnode_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
)

// TestMetricsAndReadiness runs a one-member node with metrics: it is not ready before its own
// publish is applied, and afterwards the scrape shows what the node did.
func TestMetricsAndReadiness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, st, _ := createA(t, "a")
	defer store.Close()
	m := metrics.New(metrics.Options{NoProcessCollector: true})
	node, err := raftnode.New(raftnode.Config{
		Store: store, State: st, Transport: nowhere{}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, SnapshotCount: 10000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	m.ReadStateFrom(node.MetricsState)
	run := make(chan error, 1)
	go func() { run <- node.Run(ctx) }()

	joined := make(chan error, 1)
	go func() { joined <- node.WaitJoined(ctx) }()
	select {
	case err := <-joined:
		t.Fatalf("WaitJoined returned (%v) before the member's publish was applied", err)
	case <-time.After(300 * time.Millisecond):
	}

	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if _, err := node.WaitLeader(wctx); err != nil {
		t.Fatal(err)
	}
	term, err := node.LeaderTerm(wctx)
	if err != nil {
		t.Fatal(err)
	}
	self := membership.Member{ID: node.ID(), Name: "a", ClientURLs: []string{"http://127.0.0.1:2"}}
	if _, err := node.Propose(wctx, term, membership.Change{Kind: membership.KindPublish, Member: self}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-joined:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitJoined did not return after the publish was applied")
	}

	fams := gather(t, m)
	for name, want := range map[string]float64{
		"etcd_server_has_leader":                1,
		"etcd_server_is_leader":                 1,
		"etcd_server_leader_changes_seen_total": 1,
		"etcd_server_proposals_pending":         0,
		"etcd_server_proposals_failed_total":    0,
	} {
		if got := single(t, fams, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := single(t, fams, "etcd_server_proposals_applied_total"); got != float64(node.Applied()) || got < 2 {
		t.Errorf("proposals_applied_total = %v, want the applied index %d (at least the election's entry and the publish)", got, node.Applied())
	}
	if single(t, fams, "etcd_server_proposals_committed_total") < float64(node.Applied()) {
		t.Error("proposals_committed_total is below the applied index")
	}
	if n := fams["etcd_disk_backend_commit_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n == 0 {
		t.Error("no bbolt commit was observed")
	}

	cancel()
	if err := <-run; err != nil {
		t.Fatal(err)
	}
}

func gather(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	got, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range got {
		fams[f.GetName()] = f
	}
	return fams
}

// single is the value of a metric without labels.
func single(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	ms := fams[name].GetMetric()
	if len(ms) != 1 {
		t.Fatalf("%s: %d series, want 1", name, len(ms))
	}
	switch s := ms[0]; {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	default:
		return s.GetGauge().GetValue()
	}
}
