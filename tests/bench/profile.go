package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// syscallsOfInterest are the system calls a conf change waits on: the disk (fdatasync of the
// bbolt commits, their page writes) and the peer and client connections.
var syscallsOfInterest = []string{"syscall.Fdatasync", "syscall.pwrite", "syscall.write", "syscall.read"}

// profileConfChanges runs the in-process conf change loop (addRemoveLoop) twice for
// -profile-for: first while the leader records a CPU profile, then while the leader and a
// follower record execution traces (apart, since tracing costs CPU the profile would show).
// It writes them to -profile and summarises them per change: the leader's CPU time and the
// system calls each member blocked in. The loops run apart from the measured one, whose
// figures profiling would slow down.
func (b *bench) profileConfChanges(ctx context.Context) error {
	dir := b.opt.profile
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(b.root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ms, _, err := b.leaderFirst()
	if err != nil {
		return err
	}
	leader, follower := ms[0], ms[1]
	secs := max(1, int(b.opt.profileFor.Round(time.Second)/time.Second))
	// during fetches the profiles while the conf change loop fills their window, and returns
	// how many changes it made.
	during := func(fetches ...[2]string) (int, error) {
		errs := make(chan error, len(fetches))
		for _, f := range fetches {
			go func() { errs <- fetch(ctx, f[0], filepath.Join(dir, f[1]), time.Duration(secs+30)*time.Second) }()
		}
		// The profiles cover secs from their requests, sent just now.
		s, loopErr := b.addRemoveLoop(ctx, viaLeader, math.MaxInt, time.Now().Add(time.Duration(secs)*time.Second))
		for range fetches {
			if err := <-errs; err != nil && loopErr == nil {
				loopErr = err
			}
		}
		return len(s), loopErr
	}

	cpuChanges, err := during([2]string{fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", leader.MetricsURL, secs), "leader-cpu.pprof"})
	if err != nil {
		return err
	}
	traceChanges, err := during(
		[2]string{fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", leader.MetricsURL, secs), "leader.trace"},
		[2]string{fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", follower.MetricsURL, secs), "follower.trace"})
	if err != nil {
		return err
	}

	summary := []string{fmt.Sprintf("leader %s, follower %s; %d conf changes in %d s under the CPU profile, %d under the traces",
		leader.Name, follower.Name, cpuChanges, secs, traceChanges)}
	cpu, err := cpuSummary(ctx, dir, cpuChanges)
	if err != nil {
		return err
	}
	summary = append(summary, cpu)
	for _, who := range []string{"leader", "follower"} {
		line, err := syscallSummary(ctx, dir, who, traceChanges)
		if err != nil {
			return err
		}
		summary = append(summary, line)
	}
	text := strings.Join(summary, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(text), 0o644); err != nil {
		return err
	}
	for _, s := range summary {
		b.rep.note("profile: " + s)
	}
	b.rep.note("profile: files in " + dir + " (go tool pprof, go tool trace)")
	return nil
}

// fetch writes what url answers to file.
func fetch(ctx context.Context, url, file string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}

// goTool runs `go tool ARGS...` and returns its stdout.
func goTool(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// syscallSummary turns WHO.trace into WHO-syscall.pprof (time blocked in system calls, by
// stack) and says, per conf change, how many of each interesting call the member made and how
// long they took.
func syscallSummary(ctx context.Context, dir, who string, changes int) (string, error) {
	out, err := goTool(ctx, "trace", "-pprof=syscall", filepath.Join(dir, who+".trace"))
	if err != nil {
		return "", err
	}
	prof := filepath.Join(dir, who+"-syscall.pprof")
	if err := os.WriteFile(prof, []byte(out), 0o644); err != nil {
		return "", err
	}
	counts, err := pprofFlat(ctx, prof, "-sample_index=0")
	if err != nil {
		return "", err
	}
	delays, err := pprofFlat(ctx, prof, "-sample_index=1", "-unit=ms")
	if err != nil {
		return "", err
	}
	var parts []string
	for _, fn := range syscallsOfInterest {
		n, d := counts[fn], delays[fn]
		if n == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f calls, %.3f ms (%.3f ms each)",
			strings.TrimPrefix(fn, "syscall."), n/float64(changes), d/float64(changes), d/n))
	}
	return fmt.Sprintf("%s, per change, blocked in: %s", who, strings.Join(parts, "; ")), nil
}

// pprofFlat reads the flat column of `go tool pprof -top` for every function, as numbers in
// the unit the extra arguments ask for.
func pprofFlat(ctx context.Context, prof string, extra ...string) (map[string]float64, error) {
	out, err := goTool(ctx, append(append([]string{"pprof", "-top", "-nodecount=200"}, extra...), prof)...)
	if err != nil {
		return nil, err
	}
	flat := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "ms"), 64)
		if err != nil {
			continue
		}
		flat[f[len(f)-1]] = v
	}
	if len(flat) == 0 {
		return nil, errors.New("go tool pprof -top printed no functions for " + prof)
	}
	return flat, nil
}

// cpuSummary writes the top of the leader's CPU profile next to it and says how much CPU the
// leader spent per change.
func cpuSummary(ctx context.Context, dir string, changes int) (string, error) {
	prof := filepath.Join(dir, "leader-cpu.pprof")
	out, err := goTool(ctx, "pprof", "-top", "-nodecount=30", prof)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "leader-cpu.txt"), []byte(out), 0o644); err != nil {
		return "", err
	}
	// "Duration: 5s, Total samples = 1.21s (24.2%)"
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "Total samples = ")
		if !ok {
			continue
		}
		total, err := time.ParseDuration(strings.Fields(rest)[0])
		if err != nil {
			return "", fmt.Errorf("leader CPU profile: %q: %v", line, err)
		}
		return fmt.Sprintf("leader CPU per change: %.3f ms (top functions in leader-cpu.txt)", millis(total)/float64(changes)), nil
	}
	return "", errors.New("leader CPU profile: no total in go tool pprof -top")
}
