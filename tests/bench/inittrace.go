package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// initProfile is what GODEBUG=inittrace=1 says about the package initialisation of a series of
// processes of one program: the runtime times every package's init functions and prints one
// line for each. It is the start-up's profile: a process that lives for milliseconds gives a
// CPU profiler nothing to sample.
type initProfile struct {
	total    samples            // ms of init per process, all packages
	packages map[string]samples // ms per process, by package
}

// initRuns runs each tool b.opt.rssRuns times with GODEBUG=inittrace=1, interleaved and warmed
// up as in listRuns. The warm-up runs are parsed too, so a program that prints no trace fails
// at once, but not kept.
func (b *bench) initRuns(ctx context.Context, tools []tool) (map[string]initProfile, error) {
	res := map[string]initProfile{}
	for i := range b.opt.warmup + b.opt.rssRuns {
		for j := range tools {
			t := tools[(i+j)%len(tools)]
			r, err := b.r.runEnv(ctx, []string{"GODEBUG=inittrace=1"}, t.path, t.args...)
			if err != nil {
				return nil, err
			}
			total, per, err := parseInitTrace(r.stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.key, err)
			}
			if i < b.opt.warmup {
				continue
			}
			p, ok := res[t.key]
			if !ok {
				p.packages = map[string]samples{}
			}
			p.total = append(p.total, total)
			for pkg, ms := range per {
				p.packages[pkg] = append(p.packages[pkg], ms)
			}
			res[t.key] = p
		}
	}
	return res, nil
}

// parseInitTrace reads lines like
//
//	init google.golang.org/grpc @2.7 ms, 0.15 ms clock, 28376 bytes, 476 allocs
//
// (started 2.7 ms after the runtime, ran 0.15 ms) into the sum of the init times and the time
// by package (a package's line may appear once per init phase). When the inits started says
// little: writing these lines takes time between them.
func parseInitTrace(stderr string) (total float64, per map[string]float64, err error) {
	per = map[string]float64{}
	for _, line := range strings.Split(stderr, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != "init" || !strings.HasPrefix(f[2], "@") || f[5] != "ms" || !strings.HasPrefix(f[6], "clock") {
			continue
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return 0, nil, fmt.Errorf("inittrace line %q: %v", line, err)
		}
		per[f[1]] += ms
		total += ms
	}
	if len(per) == 0 {
		return 0, nil, fmt.Errorf("no inittrace lines on stderr: %q", stderr)
	}
	return total, per, nil
}

// top names the n packages with the largest median init time, with those medians.
func (p initProfile) top(n int) string {
	pkgs := slices.Collect(maps.Keys(p.packages))
	med := map[string]float64{}
	for _, k := range pkgs {
		med[k] = p.packages[k].median()
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		if med[a] != med[b] {
			if med[a] > med[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range pkgs[:min(n, len(pkgs))] {
		parts = append(parts, fmt.Sprintf("%s %.3f", k, med[k]))
	}
	return fmt.Sprintf("%d packages; largest (median ms): %s", len(pkgs), strings.Join(parts, ", "))
}
