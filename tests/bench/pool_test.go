package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPooledInterval(t *testing.T) {
	// Ratios e^-0.1, 1, e^0.1: geometric mean 1; the logs' standard deviation 0.1, so the
	// interval is exp(±2.920 * 0.1 / sqrt(3)) with two degrees of freedom.
	p := pooledRatio{ratios: []float64{math.Exp(-0.1), 1, math.Exp(0.1)}}
	mean, lo, hi := p.interval()
	h := 2.920 * 0.1 / math.Sqrt(3)
	if math.Abs(mean-1) > 1e-9 || math.Abs(lo-math.Exp(-h)) > 1e-9 || math.Abs(hi-math.Exp(h)) > 1e-9 {
		t.Errorf("interval (%v, %v, %v), want (1, %v, %v)", mean, lo, hi, math.Exp(-h), math.Exp(h))
	}
	if _, lo, hi := (pooledRatio{ratios: []float64{1.2}}).interval(); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one run: (%v, %v), want NaN", lo, hi)
	}
}

func TestTargetBound(t *testing.T) {
	for target, want := range map[string]float64{"<= 1.1x": 1.1, "<= 0.7x": 0.7, "report": -1, "< 1x": -1, "<= 52 ms": -1} {
		got, ok := targetBound(target)
		if ok != (want >= 0) || (ok && got != want) {
			t.Errorf("targetBound(%q) = %v, %v; want %v", target, got, ok, want)
		}
	}
}

// -pool over written reports: the ratio rows of every run, in the first report's order, met
// by the interval's upper end; rows without a ratio left out; a bad file named in one line.
func TestPoolReports(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ratios ...float64) string {
		rep := struct {
			Rows []row `json:"rows"`
		}{}
		rep.Rows = append(rep.Rows, row{Key: "learner_ready_full_history", Target: "<= 1.1x", Ratio: ptr(ratios[0])},
			row{Key: "leader_removal_gap_full_history", Target: "<= 1.1x", Ratio: ptr(ratios[1])},
			row{Key: "idle_rss", Target: "<= 20 MiB", Median: 19})
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	paths := []string{write("a.json", 1.02, 1.20), write("b.json", 1.04, 0.85), write("c.json", 1.03, 1.10)}
	pooled, err := poolReports(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(pooled) != 2 || pooled[0].key != "learner_ready_full_history" || len(pooled[1].ratios) != 3 {
		t.Fatalf("pooled %+v", pooled)
	}
	var out bytes.Buffer
	printPooled(&out, pooled)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], "yes") || !strings.HasSuffix(lines[2], "NO") {
		t.Errorf("table:\n%s\nwant learner ready met (tight), leader removal not (0.85 to 1.20)", out.String())
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := poolReports([]string{paths[0], bad}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a damaged report: %v, want an error naming it", err)
	}
}
