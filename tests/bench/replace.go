package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/clusterctl/clusterctl/tests/internal/cluster"
)

// replaceTimeout bounds one replacement, either CLI's: the new member starts and catches up with
// a short log in well under a second on loopback.
const replaceTimeout = 30 * time.Second

// replaceRuns times the replacement of the leader by a new member, end to end, run by run in turn
// with `clusterctl member replace` and with the same steps as separate etcdctl commands, when
// etcdctl is built. Each replacement starts from three started voters and leaves three; the
// leader is the member replaced, so every step runs, the move of leadership included.
func (b *bench) replaceRuns(ctx context.Context) (map[string]samples, error) {
	keys := []string{"clusterctl"}
	if b.etcdctl != "" {
		keys = append(keys, "etcdctl")
	}
	res := map[string]samples{}
	warm := b.opt.cycleWarmup()
	for i := range warm + b.opt.replaceRuns {
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			d, err := b.replaceOnce(ctx, k, fmt.Sprintf("rep-%s-%d", k, i))
			if err != nil {
				return nil, fmt.Errorf("replacement %d with %s: %w", i, k, err)
			}
			if i >= warm {
				res[k] = append(res[k], millis(d))
			}
		}
	}
	return res, nil
}

// replaceOnce replaces the leader by a new member called name with the CLI key and returns how
// long it took; then it waits, untimed, for the old member to exit and the cluster to be ready.
func (b *bench) replaceOnce(ctx context.Context, key, name string) (time.Duration, error) {
	if err := b.waitReady(ctx); err != nil {
		return 0, err
	}
	ms, oldID, err := b.leaderFirst()
	if err != nil {
		return 0, err
	}
	m, err := b.c.Alloc(name)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, replaceTimeout, fmt.Errorf("replacing %s took longer than %v", ms[0].Name, replaceTimeout))
	defer cancel()
	var d time.Duration
	var note string
	if key == "clusterctl" {
		d, note, err = b.replaceClusterctl(ctx, ms, m)
	} else {
		d, note, err = b.replaceEtcdctl(ctx, ms, oldID, m)
	}
	if note != "" {
		b.rep.note(fmt.Sprintf("replacement %s of %s: %s; done when run again (%.0f ms in all)", name, ms[0].Name, note, millis(d)))
	}
	if err != nil {
		return 0, err
	}
	if _, err := b.c.WaitExit(ms[0].Name, 10*time.Second); err != nil {
		return 0, fmt.Errorf("the replaced member %s: %w", ms[0].Name, err)
	}
	return d, nil
}

// replaceClusterctl runs `clusterctl member replace OLD NEW --peer-urls=URL -w env` and starts
// the new member from the environment it prints as soon as the last line of it is read, while
// the command waits for the member to catch up. A command that fails after that is run again
// once, as the runbook says to (it goes on from the step it stopped at), and the failure is
// returned as a note. The time runs from just before the first command is started until the
// last has exited.
func (b *bench) replaceClusterctl(ctx context.Context, ms []*cluster.Member, m *cluster.Member) (d time.Duration, note string, err error) {
	start := time.Now()
	for attempt := range 2 {
		err = b.replaceCommand(ctx, ms, m, !m.Running())
		if err == nil || !m.Running() || ctx.Err() != nil {
			break
		}
		if attempt == 0 {
			note = strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " | ")
		}
	}
	return time.Since(start), note, err
}

// replaceCommand runs one `clusterctl member replace ... -w env` to completion, and starts the
// new member from the printed environment if start is set.
func (b *bench) replaceCommand(ctx context.Context, ms []*cluster.Member, m *cluster.Member, start bool) error {
	cmd := exec.CommandContext(ctx, b.clusterctl, "--endpoints="+cluster.Endpoints(ms), "member", "replace", ms[0].Name, m.Name,
		"--peer-urls="+m.PeerURL, "--wait-timeout="+replaceTimeout.String(), "-w", "env")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	env, rest, err := readEnv(out)
	if err == nil && start {
		err = b.c.Start(m.Name, m.ListenArgs(), env)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("member replace -w env: %v\n%s", err, stderr.String())
	}
	tail, _ := io.ReadAll(rest)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("member replace: %v: %s", err, lastLine(stderr.String()))
	}
	if len(bytes.TrimSpace(tail)) != 0 {
		return fmt.Errorf("member replace -w env printed more than the environment: %q", tail)
	}
	return nil
}

// lastLine is the last non-empty line of s: a failed command's Error line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// envEnd starts the last line of a printed environment, clusterctl's and etcdctl's alike.
const envEnd = "ETCD_INITIAL_CLUSTER_STATE="

// readEnv reads an environment from r up to its last line and returns it, with the rest of r.
func readEnv(r io.Reader) ([]string, io.Reader, error) {
	br := bufio.NewReader(r)
	var text strings.Builder
	for {
		line, err := br.ReadString('\n')
		text.WriteString(line)
		if strings.HasPrefix(line, envEnd) {
			env, perr := cluster.ParseEnv(text.String())
			return env, br, perr
		}
		if err != nil {
			return nil, br, fmt.Errorf("no %s line in %q: %v", envEnd, text.String(), err)
		}
	}
}

// replaceEtcdctl runs the steps of member replace as separate etcdctl commands, as a runbook
// does: member add --learner, the new member started from the environment it prints, member
// promote again and again until it succeeds, move-leader to the new member if the old one leads,
// member remove. The promotions follow each other with no pause, the fastest such a loop can go;
// whether the old member leads is read in this process (one status call), where a script would
// run another command. The time runs from just before member add until member remove exited.
func (b *bench) replaceEtcdctl(ctx context.Context, ms []*cluster.Member, oldID uint64, m *cluster.Member) (d time.Duration, note string, err error) {
	eps := "--endpoints=" + cluster.Endpoints(ms)
	start := time.Now()
	add, err := b.r.run(ctx, b.etcdctl, eps, "member", "add", m.Name, "--peer-urls="+m.PeerURL, "--learner")
	if err != nil {
		return 0, "", err
	}
	id := addedID.FindStringSubmatch(add.stdout)
	if id == nil {
		return 0, "", fmt.Errorf("etcdctl member add printed %q: no member ID", add.stdout)
	}
	_, envText, ok := strings.Cut(add.stdout, "ETCD_NAME=")
	if !ok {
		return 0, "", fmt.Errorf("etcdctl member add printed %q: no environment", add.stdout)
	}
	env, err := cluster.ParseEnv("ETCD_NAME=" + envText)
	if err != nil {
		return 0, "", fmt.Errorf("etcdctl member add printed %q: %v", add.stdout, err)
	}
	if err := b.c.Start(m.Name, m.ListenArgs(), env); err != nil {
		return 0, "", err
	}
	if err := b.promoteLoop(ctx, eps, id[1]); err != nil {
		return 0, "", err
	}
	note, err = b.moveLeaderEtcdctl(ctx, ms[0], oldID, id[1])
	if err != nil {
		return 0, note, err
	}
	if _, err := b.r.run(ctx, b.etcdctl, eps, "member", "remove", fmt.Sprintf("%x", oldID)); err != nil {
		return 0, "", err
	}
	return time.Since(start), note, nil
}

// moveLeaderEtcdctl runs `etcdctl move-leader NEW` at the old member if it leads, and once more
// if that fails while it still leads, as an operator would; the failure is returned as a note.
func (b *bench) moveLeaderEtcdctl(ctx context.Context, old *cluster.Member, oldID uint64, newID string) (note string, err error) {
	for attempt := range 2 {
		st, err := cluster.Status(old)
		if err != nil || st.GetLeader() != oldID {
			return note, err
		}
		_, err = b.r.run(ctx, b.etcdctl, "--endpoints="+old.ClientAddr, "move-leader", newID)
		if err == nil {
			return note, nil
		}
		if attempt == 1 || ctx.Err() != nil {
			return note, err
		}
		note = "etcdctl move-leader: " + lastLine(err.Error())
	}
	return note, nil
}

// promoteLoop runs `etcdctl member promote ID` until it succeeds, bounded by ctx (replaceTimeout)
// and by a count: each attempt is a process of several milliseconds.
func (b *bench) promoteLoop(ctx context.Context, eps, id string) error {
	var last error
	for range 5000 {
		_, err := b.r.run(ctx, b.etcdctl, eps, "member", "promote", id)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		}
		last = err
	}
	return fmt.Errorf("etcdctl member promote %s: %v", id, last)
}

// fillReplace adds the member replace rows: clusterctl's, etcdctl's steps on the same cluster,
// and their ratio against the target of at most half etcdctl's time.
func (r *report) fillReplace(s map[string]samples, warmup int) {
	if len(s) == 0 {
		return
	}
	ctl := stat("member_replace_wall", "clusterctl member replace of the leader, end to end (learner started from -w env)", "ms", s["clusterctl"], warmup, "report")
	e, ok := s["etcdctl"]
	if !ok {
		r.Rows = append(r.Rows, ctl)
		return
	}
	er := stat("etcdctl_replace_wall", "etcdctl add --learner, start, promote until it succeeds, move-leader, remove (same cluster)", "ms", e, warmup, "report")
	cmp := stat("member_replace_vs_etcdctl", "clusterctl member replace / etcdctl's steps (medians)", "x", nil, warmup, "<= 0.5x")
	cmp.Runs, cmp.Median, cmp.P99, cmp.Max = len(e), ctl.Median/er.Median, ctl.P99/er.P99, math.NaN()
	cmp.Met = ptr(cmp.Median <= 0.5)
	r.Rows = append(r.Rows, ctl, er, cmp)
}
