package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// A ratio of two series measured in turn in one run varies between runs by more than its
// samples say: the history phase's control runs (-history-control, both clusters alike) put the
// leader-removal ratio anywhere from 0.85x to 1.24x. Whether a ratio meets its target is then a
// question about many runs, which -pool answers from their JSON reports: the geometric mean of
// each ratio over the runs and a 90% interval for it (Student's t over the runs' log ratios),
// met when the interval's upper end is within the target.

// pooledRatio is one ratio row over several runs.
type pooledRatio struct {
	key, target string
	ratios      []float64
}

// tQuantile95 is Student's t distribution's 95th percentile by degrees of freedom (1 to 30), for
// a two-sided 90% interval; beyond 30 the normal's 1.645 is within 2% of it.
var tQuantile95 = [...]float64{6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
	1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
	1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697}

// interval is the geometric mean of p's ratios and its 90% interval; NaN bounds for one run.
func (p pooledRatio) interval() (mean, lo, hi float64) {
	logs := make([]float64, len(p.ratios))
	for i, r := range p.ratios {
		logs[i] = math.Log(r)
	}
	n := float64(len(logs))
	var sum float64
	for _, l := range logs {
		sum += l
	}
	m := sum / n
	if len(logs) < 2 {
		return math.Exp(m), math.NaN(), math.NaN()
	}
	var ss float64
	for _, l := range logs {
		ss += (l - m) * (l - m)
	}
	t := 1.645
	if df := len(logs) - 1; df <= len(tQuantile95) {
		t = tQuantile95[df-1]
	}
	h := t * math.Sqrt(ss/(n-1)/n)
	return math.Exp(m), math.Exp(m - h), math.Exp(m + h)
}

// targetBound reads a target of the form "<= 1.1x"; ok is false for any other.
func targetBound(target string) (bound float64, ok bool) {
	s, found := strings.CutPrefix(target, "<= ")
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, "x")
	if !found {
		return 0, false
	}
	bound, err := strconv.ParseFloat(s, 64)
	return bound, err == nil
}

// poolReports reads the JSON reports at paths and gathers every row with a ratio, in the order
// of the first report's rows.
func poolReports(paths []string) ([]pooledRatio, error) {
	var order []string
	rows := map[string]*pooledRatio{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var rep report
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		for _, x := range rep.Rows {
			if x.Ratio == nil || *x.Ratio <= 0 || math.IsInf(*x.Ratio, 0) || math.IsNaN(*x.Ratio) {
				continue
			}
			p, ok := rows[x.Key]
			if !ok {
				p = &pooledRatio{key: x.Key, target: x.Target}
				rows[x.Key] = p
				order = append(order, x.Key)
			}
			p.ratios = append(p.ratios, *x.Ratio)
		}
	}
	pooled := make([]pooledRatio, len(order))
	for i, k := range order {
		pooled[i] = *rows[k]
	}
	return pooled, nil
}

// printPooled writes one line per ratio row: its runs, geometric mean, 90% interval, range and
// target, met when the interval's upper end is within a "<= Nx" target.
func printPooled(w io.Writer, pooled []pooledRatio) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ratio\truns\tgeometric mean\t90% interval\trange\ttarget\tmet")
	for _, p := range pooled {
		mean, lo, hi := p.interval()
		span, met := "-", ""
		if !math.IsNaN(hi) {
			span = fmt.Sprintf("%.3f to %.3fx", lo, hi)
			if bound, ok := targetBound(p.target); ok {
				met = map[bool]string{true: "yes", false: "NO"}[hi <= bound]
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3fx\t%s\t%.2f to %.2fx\t%s\t%s\n", p.key, len(p.ratios), mean, span,
			slices.Min(p.ratios), slices.Max(p.ratios), p.target, met)
	}
	tw.Flush()
}
