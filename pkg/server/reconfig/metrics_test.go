package reconfig

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/clusterctl/clusterctl/pkg/server/metrics"
)

// A change is counted on the leader that decided it, and only there; a dry run is not counted.
// (Forwarding needs the peer port, which these nodes lack: a forwarded change is counted by the
// leader's Do, since a leader's Do counts only what it decided itself.)
func TestChangesCountedOnTheLeader(t *testing.T) {
	_, coords := startNodes(t, "")
	for _, c := range coords {
		c.cfg.Metrics = metrics.New(metrics.Options{NoProcessCollector: true})
	}
	lead := waitLeader(t, coords)
	leader := coords[lead]

	add := learner("d", 4)
	if _, err := do(leader, add, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dry := learner("e", 5)
	if _, err := leader.Do(ctx, Request{Change: dry, DryRun: true}); err == nil {
		t.Fatal("a second learner passed the dry run with --max-learners 1")
	}
	again := learner("f", 4) // d's peer URL
	again.Member.IsLearner = false
	if _, err := do(leader, again, 5*time.Second); err == nil {
		t.Fatal("an add with a peer URL in use was applied")
	}

	for id, c := range coords {
		applied, refused := changes(t, c.cfg.Metrics, "add", "applied"), changes(t, c.cfg.Metrics, "add", "refused")
		want := 0.0
		if id == lead {
			want = 1
		}
		if applied != want || refused != want {
			t.Errorf("member %x (leader %v): add applied %v, refused %v; want %v each", id, id == lead, applied, refused, want)
		}
	}
}

func changes(t *testing.T, m *metrics.Metrics, kind, outcome string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "clusterd_membership_changes_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			if labels(s)["kind"] == kind && labels(s)["outcome"] == outcome {
				return s.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no clusterd_membership_changes_total{kind=%q,outcome=%q}", kind, outcome)
	return 0
}

func labels(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
