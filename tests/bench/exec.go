package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const sigterm = syscall.SIGTERM

// cliTimeout bounds one CLI process; any of them finishes in milliseconds on loopback.
const cliTimeout = 20 * time.Second

// runResult is one whole CLI process as its user sees it.
type runResult struct {
	wall   time.Duration // from just before fork until the process was reaped
	cpu    time.Duration // user + system time of the process
	stdout string
	stderr string
}

// runner starts CLI processes with an environment of PATH only, so nothing in the caller's
// environment (CLUSTERCTL_*, ETCDCTL_*) changes what is measured. Output goes to files rather
// than pipes, so no copying goroutine runs in this process while the child is timed.
type runner struct {
	out, errf *os.File
}

func newRunner(dir string) (*runner, error) {
	out, err := os.CreateTemp(dir, "stdout-")
	if err != nil {
		return nil, err
	}
	errf, err := os.CreateTemp(dir, "stderr-")
	if err != nil {
		out.Close()
		return nil, err
	}
	return &runner{out: out, errf: errf}, nil
}

func (r *runner) close() {
	r.out.Close()
	r.errf.Close()
}

func rewind(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, 0)
	return err
}

func readAll(f *os.File) string {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", f.Name(), err)
	}
	return string(b)
}

// run runs one process to completion and fails unless it exits 0.
func (r *runner) run(ctx context.Context, path string, args ...string) (runResult, error) {
	return r.runEnv(ctx, nil, path, args...)
}

// runEnv is run with env added to the environment of PATH only.
func (r *runner) runEnv(ctx context.Context, env []string, path string, args ...string) (runResult, error) {
	if err := rewind(r.out); err != nil {
		return runResult{}, err
	}
	if err := rewind(r.errf); err != nil {
		return runResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdout = r.out
	cmd.Stderr = r.errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			// Killed because the run was cancelled or timed out: say why, not "signal: killed".
			return runResult{}, fmt.Errorf("%s: %w", path, context.Cause(ctx))
		}
		return runResult{}, fmt.Errorf("%s %s: %v\n%s", path, strings.Join(args, " "), err, readAll(r.errf))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return runResult{}, fmt.Errorf("no rusage for %s", path)
	}
	return runResult{
		wall:   wall,
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		stdout: readAll(r.out),
		stderr: readAll(r.errf),
	}, nil
}
