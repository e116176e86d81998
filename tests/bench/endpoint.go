package main

import (
	"context"
	"math"
)

// endpointStatusRuns times `endpoint status --cluster` of clusterctl and of etcdctl when it is
// built, interleaved and warmed up as the member list series; both print one line a member.
func (b *bench) endpointStatusRuns(ctx context.Context, ep string) (map[string][]runResult, error) {
	args := []string{"--endpoints=" + ep, "endpoint", "status", "--cluster"}
	tools := []tool{{key: "clusterctl", path: b.clusterctl, args: args, lines: 3}}
	if b.etcdctl != "" {
		tools = append(tools, tool{key: "etcdctl", path: b.etcdctl, args: args, lines: 3})
	}
	return b.listRuns(ctx, tools)
}

// fillEndpointStatus adds the endpoint status rows: clusterctl's, etcdctl's on the same
// cluster, and their ratio against the target of at most half etcdctl's time.
func (r *report) fillEndpointStatus(f figures) {
	w := r.Options["warmup"].(int)
	ctl := stat("endpoint_status_wall", "clusterctl endpoint status --cluster, wall (process, 3 members)", "ms", pick(f.statuses["clusterctl"], wallOf), w, "report")
	r.Rows = append(r.Rows, ctl)
	etcd, ok := f.statuses["etcdctl"]
	if !ok {
		return
	}
	e := stat("etcdctl_endpoint_status_wall", "etcdctl 3.7.1 endpoint status --cluster, wall (same cluster)", "ms", pick(etcd, wallOf), w, "report")
	cmp := stat("endpoint_status_vs_etcdctl", "clusterctl endpoint status --cluster / etcdctl's (medians)", "x", nil, w, "report")
	cmp.Runs, cmp.Median, cmp.P99, cmp.Max = len(etcd), ctl.Median/e.Median, ctl.P99/e.P99, math.NaN()
	r.Rows = append(r.Rows, e, cmp)
}
