package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// contextCount is the number of contexts cluster status --all-contexts is timed over.
const contextCount = 10

// statusFigures are cluster status's series: against what an operator runs with etcdctl for the
// same view, and --all-contexts against the slowest of the same contexts' single statuses.
type statusFigures struct {
	ctl []runResult
	// etcdctl is endpoint status --cluster plus member list, one pair of processes a run; nil
	// without etcdctl.
	etcdctl []runResult
	// all is --all-contexts; slowest the slowest of the contexts' single statuses, a run each
	// round of them.
	all, slowest []runResult
}

// clusterStatusRuns times cluster status of the 3 members, interleaved with etcdctl's endpoint
// status --cluster + member list, then --all-contexts over contextCount contexts (each naming
// the members, its own first) interleaved with each context's single status. Every process has
// CLUSTERCTL_CONFIG set to the contexts file written here, and nothing else of the caller's.
func (b *bench) clusterStatusRuns(ctx context.Context, ms []*cluster.Member) (*statusFigures, error) {
	eps := cluster.Endpoints(ms)
	cfg, err := b.writeContexts(ms)
	if err != nil {
		return nil, err
	}
	env := []string{"CLUSTERCTL_CONFIG=" + cfg}
	var f statusFigures
	const statusLines = 10 + 3 // the cluster's figures, a line a member
	for i := range b.opt.warmup + b.opt.statusRuns {
		measured := i >= b.opt.warmup
		r, err := b.r.runEnv(ctx, env, b.clusterctl, "--endpoints="+eps, "cluster", "status")
		if err != nil {
			return nil, err
		}
		if i == 0 && strings.Count(r.stdout, "\n") != statusLines {
			return nil, fmt.Errorf("cluster status printed %q, want %d lines", r.stdout, statusLines)
		}
		if measured {
			f.ctl = append(f.ctl, r)
		}
		if b.etcdctl != "" {
			st, err := b.r.run(ctx, b.etcdctl, "--endpoints="+eps, "endpoint", "status", "--cluster")
			if err != nil {
				return nil, err
			}
			l, err := b.r.run(ctx, b.etcdctl, "--endpoints="+eps, "member", "list")
			if err != nil {
				return nil, err
			}
			if measured {
				f.etcdctl = append(f.etcdctl, runResult{wall: st.wall + l.wall, cpu: st.cpu + l.cpu})
			}
		}
		all, err := b.r.runEnv(ctx, env, b.clusterctl, "cluster", "status", "--all-contexts")
		if err != nil {
			return nil, err
		}
		if i == 0 && strings.Count(all.stdout, "\n") != contextCount {
			return nil, fmt.Errorf("cluster status --all-contexts printed %q, want %d lines", all.stdout, contextCount)
		}
		var slowest runResult
		for k := range contextCount {
			one, err := b.r.runEnv(ctx, env, b.clusterctl, "--context", contextName(k), "cluster", "status")
			if err != nil {
				return nil, err
			}
			if one.wall > slowest.wall {
				slowest = one
			}
		}
		if measured {
			f.all, f.slowest = append(f.all, all), append(f.slowest, slowest)
		}
	}
	return &f, nil
}

func contextName(k int) string { return fmt.Sprintf("c%d", k) }

// writeContexts writes the contexts file: contextCount contexts, each with every member's
// endpoint, the k-th member's first.
func (b *bench) writeContexts(ms []*cluster.Member) (string, error) {
	var s strings.Builder
	s.WriteString("contexts:\n")
	for k := range contextCount {
		eps := make([]string, len(ms))
		for i := range ms {
			eps[i] = ms[(k+i)%len(ms)].ClientAddr
		}
		fmt.Fprintf(&s, "  - name: %s\n    endpoints: [%s]\n", contextName(k), strings.Join(eps, ", "))
	}
	path := filepath.Join(b.dir, "contexts.yaml")
	return path, os.WriteFile(path, []byte(s.String()), 0o600)
}

// fillClusterStatus adds cluster status's rows: against etcdctl's two commands (faster is the
// target), and --all-contexts against the slowest single status of the same round (about 1x).
func (r *report) fillClusterStatus(f *statusFigures) {
	if f == nil {
		return
	}
	w := r.Options["warmup"].(int)
	ctl := stat("cluster_status_wall", "clusterctl cluster status, wall (process, 3 members)", "ms", pick(f.ctl, wallOf), w, "report")
	r.Rows = append(r.Rows, ctl)
	if f.etcdctl != nil {
		e := stat("etcdctl_status_and_list_wall", "etcdctl 3.7.1 endpoint status --cluster + member list, wall (2 processes, same cluster)", "ms", pick(f.etcdctl, wallOf), w, "report")
		cmp := stat("cluster_status_vs_etcdctl", "clusterctl cluster status / etcdctl's two commands (medians)", "x", nil, w, "< 1x")
		cmp.Runs, cmp.Median, cmp.P99, cmp.Max = len(f.etcdctl), ctl.Median/e.Median, ctl.P99/e.P99, math.NaN()
		cmp.Met = ptr(cmp.Median < 1)
		r.Rows = append(r.Rows, e, cmp)
	}
	all := stat("cluster_status_all_contexts_wall", fmt.Sprintf("clusterctl cluster status --all-contexts, %d contexts, wall (process)", contextCount), "ms", pick(f.all, wallOf), w, "report")
	slow := stat("cluster_status_slowest_single_wall", fmt.Sprintf("slowest of the %d contexts' single cluster status, wall (process, each round)", contextCount), "ms", pick(f.slowest, wallOf), w, "report")
	cmp := stat("cluster_status_all_contexts_vs_slowest", "--all-contexts / the slowest single status (medians)", "x", nil, w, "report")
	cmp.Runs, cmp.Median, cmp.P99, cmp.Max = len(f.all), all.Median/slow.Median, all.P99/slow.P99, math.NaN()
	r.Rows = append(r.Rows, all, slow, cmp)
}
