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

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// replaceTimeout bounds one replacement, either CLI's: the new member starts and catches up with
// a short log in well under a second on loopback.
const replaceTimeout = 30 * time.Second

// replaceResult is one replacement of the leader, with when each of its four steps was done
// (add, promote, move of leadership, removal), in milliseconds from its start: for clusterctl
// when it printed the step's line on stderr, for etcdctl when the step's command exited.
type replaceResult struct {
	CLI     string     `json:"cli"`
	Name    string     `json:"name"`
	Old     string     `json:"old"`
	TotalMS float64    `json:"total_ms"`
	StepsMS [4]float64 `json:"steps_ms"`
	// PromoteAttempts counts etcdctl's member promote commands (clusterctl's own waits are its
	// business).
	PromoteAttempts int `json:"promote_attempts,omitempty"`
	// Note is the error of a command that failed and was run again.
	Note string `json:"note,omitempty"`
}

// replaceRuns times the replacement of the leader by a new member, end to end, run by run in turn
// with `clusterctl member replace` and with the same steps as separate etcdctl commands, when
// etcdctl is built. Each replacement starts from three started voters and leaves three; the
// leader is the member replaced, so every step runs, the move of leadership included.
func (b *bench) replaceRuns(ctx context.Context) (map[string]samples, []replaceResult, error) {
	return b.replaceSeries(ctx, b.opt.replaceRuns, "rep", "replacement", b.replaceOnce)
}

// replaceSeries runs once runs times per CLI (after the warm-up), the CLIs in turn, naming each
// new member prefix-CLI-i, and returns the end-to-end times per CLI and every measured result.
func (b *bench) replaceSeries(ctx context.Context, runs int, prefix, what string, once func(context.Context, string, string) (replaceResult, error)) (map[string]samples, []replaceResult, error) {
	keys := []string{"clusterctl"}
	if b.etcdctl != "" {
		keys = append(keys, "etcdctl")
	}
	res := map[string]samples{}
	var all []replaceResult
	warm := b.opt.cycleWarmup()
	for i := range warm + runs {
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			dephase()
			r, err := once(ctx, k, fmt.Sprintf("%s-%s-%d", prefix, k, i))
			if err != nil {
				return nil, nil, fmt.Errorf("%s %d with %s: %w", what, i, k, err)
			}
			if i >= warm {
				res[k] = append(res[k], r.TotalMS)
				all = append(all, r)
			}
		}
	}
	return res, all, nil
}

// replaceOnce replaces the leader by a new member called name with the CLI key; then it waits,
// untimed, for the old member to exit.
func (b *bench) replaceOnce(ctx context.Context, key, name string) (replaceResult, error) {
	r := replaceResult{CLI: key, Name: name}
	if err := b.waitReady(ctx); err != nil {
		return r, err
	}
	ms, oldID, err := b.leaderFirst()
	if err != nil {
		return r, err
	}
	r.Old = ms[0].Name
	m, err := b.c.Alloc(name)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, replaceTimeout, fmt.Errorf("replacing %s took longer than %v", ms[0].Name, replaceTimeout))
	defer cancel()
	if key == "clusterctl" {
		err = b.replaceClusterctl(ctx, ms, m, &r)
	} else {
		err = b.replaceEtcdctl(ctx, ms, oldID, m, &r)
	}
	if r.Note != "" {
		b.rep.note(fmt.Sprintf("replacement %s of %s: %s; done when run again (%.0f ms in all)", name, r.Old, r.Note, r.TotalMS))
	}
	if err != nil {
		return r, err
	}
	if _, err := b.c.WaitExit(ms[0].Name, 10*time.Second); err != nil {
		return r, fmt.Errorf("the replaced member %s: %w", ms[0].Name, err)
	}
	return r, nil
}

// replaceClusterctl runs `clusterctl member replace OLD NEW --peer-urls=URL -w env` and starts
// the new member from the environment it prints as soon as the last line of it is read, while
// the command waits for the member to catch up. A command that fails after that is run again
// once, as the runbook says to (it goes on from the step it stopped at), and the failure is
// kept as r.Note. The time runs from just before the first command is started until the last
// has exited.
func (b *bench) replaceClusterctl(ctx context.Context, ms []*cluster.Member, m *cluster.Member, r *replaceResult) error {
	steps := &stepClock{start: time.Now(), at: &r.StepsMS}
	var err error
	for attempt := range 2 {
		err = b.replaceCommand(ctx, ms, ms[0].Name, m, !m.Running(), steps)
		if err == nil || !m.Running() || ctx.Err() != nil {
			break
		}
		if attempt == 0 {
			r.Note = strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " | ")
		}
	}
	r.TotalMS = millis(time.Since(steps.start))
	return err
}

// replaceCommand runs one `clusterctl member replace OLD ... -w env` against the members ms to
// completion, and starts the new member from the printed environment if start is set. Its stderr
// goes through steps.
func (b *bench) replaceCommand(ctx context.Context, ms []*cluster.Member, old string, m *cluster.Member, start bool, steps *stepClock) error {
	cmd := exec.CommandContext(ctx, b.clusterctl, "--endpoints="+cluster.Endpoints(ms), "member", "replace", old, m.Name,
		"--peer-urls="+m.PeerURL, "--wait-timeout="+replaceTimeout.String(), "-w", "env")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	steps.text.Reset()
	cmd.Stderr = steps
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
		return fmt.Errorf("member replace -w env: %v\n%s", err, steps.text.String())
	}
	tail, _ := io.ReadAll(rest)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("member replace: %v: %s", err, lastLine(steps.text.String()))
	}
	if len(bytes.TrimSpace(tail)) != 0 {
		return fmt.Errorf("member replace -w env printed more than the environment: %q", tail)
	}
	return nil
}

// stepClock is member replace's stderr: it keeps the text and notes when each "step N of M:" line
// arrived (M is 4 for a live old member, 3 for a dead one). exec copies stderr from one
// goroutine, so Write is never called concurrently.
type stepClock struct {
	start time.Time
	at    *[4]float64
	text  bytes.Buffer
	line  []byte
}

func (c *stepClock) Write(p []byte) (int, error) {
	now := time.Now()
	c.text.Write(p)
	c.line = append(c.line, p...)
	for {
		i := bytes.IndexByte(c.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		var n, of int
		// The first line of each step: a run again after a failure prints the done ones as skipped.
		if _, err := fmt.Sscanf(string(c.line[:i]), "step %d of %d:", &n, &of); err == nil && n >= 1 && n <= 4 && c.at[n-1] == 0 {
			c.at[n-1] = millis(now.Sub(c.start))
		}
		c.line = c.line[i+1:]
	}
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
// promote again and again until it succeeds, endpoint health of the new member until it answers
// (member replace returns only once the new member serves), move-leader to the new member if the old one leads,
// member remove. The promotions follow each other with no pause, the fastest such a loop can go;
// whether the old member leads is read in this process (one status call), where a script would
// run another command. The time runs from just before member add until member remove exited.
func (b *bench) replaceEtcdctl(ctx context.Context, ms []*cluster.Member, oldID uint64, m *cluster.Member, r *replaceResult) error {
	eps := "--endpoints=" + cluster.Endpoints(ms)
	start := time.Now()
	done := func(step int) { r.StepsMS[step-1] = millis(time.Since(start)) }
	id, err := b.addStartPromote(ctx, eps, m, r, func() { done(1) })
	if err != nil {
		return err
	}
	done(2)
	if r.Note, err = b.moveLeaderEtcdctl(ctx, ms[0], oldID, id); err != nil {
		return err
	}
	done(3)
	if _, err := b.r.run(ctx, b.etcdctl, eps, "member", "remove", fmt.Sprintf("%x", oldID)); err != nil {
		return err
	}
	done(4)
	r.TotalMS = r.StepsMS[3]
	return nil
}

// addStartPromote runs `etcdctl member add --learner` for m, calls added, starts m from the
// environment etcdctl printed, promotes it (promoteLoop), counting the attempts in r, and waits
// until it serves (healthLoop). It
// returns the new member's ID as etcdctl printed it.
func (b *bench) addStartPromote(ctx context.Context, eps string, m *cluster.Member, r *replaceResult, added func()) (string, error) {
	add, err := b.r.run(ctx, b.etcdctl, eps, "member", "add", m.Name, "--peer-urls="+m.PeerURL, "--learner")
	if err != nil {
		return "", err
	}
	added()
	id := addedID.FindStringSubmatch(add.stdout)
	_, envText, ok := strings.Cut(add.stdout, "ETCD_NAME=")
	if id == nil || !ok {
		return "", fmt.Errorf("etcdctl member add printed %q: no member ID or environment", add.stdout)
	}
	env, err := cluster.ParseEnv("ETCD_NAME=" + envText)
	if err != nil {
		return "", fmt.Errorf("etcdctl member add printed %q: %v", add.stdout, err)
	}
	if err := b.c.Start(m.Name, m.ListenArgs(), env); err != nil {
		return "", err
	}
	if r.PromoteAttempts, err = b.promoteLoop(ctx, eps, id[1]); err != nil {
		return id[1], err
	}
	return id[1], b.healthLoop(ctx, m)
}

// healthLoop runs `etcdctl endpoint health` against the new member m until it answers healthy:
// the check that the new member serves (a linearizable read through its own client URL), which
// member replace makes before it returns, bounded like promoteLoop.
func (b *bench) healthLoop(ctx context.Context, m *cluster.Member) error {
	var last error
	for range 5000 {
		_, err := b.r.run(ctx, b.etcdctl, "--endpoints="+m.ClientAddr, "endpoint", "health")
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		}
		last = err
	}
	return fmt.Errorf("etcdctl endpoint health of %s: %v", m.Name, last)
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
// and by a count: each attempt is a process of several milliseconds. It returns the attempts.
func (b *bench) promoteLoop(ctx context.Context, eps, id string) (int, error) {
	var last error
	for n := 1; n <= 5000; n++ {
		_, err := b.r.run(ctx, b.etcdctl, eps, "member", "promote", id)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return n, fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		}
		last = err
	}
	return 5000, fmt.Errorf("etcdctl member promote %s: %v", id, last)
}

// fillReplace adds the member replace rows: clusterctl's, etcdctl's steps on the same cluster,
// and their ratio against the target of taking less time than etcdctl's steps.
func (r *report) fillReplace(s map[string]samples, warmup int) {
	r.fillVersus(s, warmup, versus{
		key: "member_replace", figure: "clusterctl member replace of the leader, end to end (learner started from -w env)",
		etcdKey: "etcdctl_replace", etcdFigure: "etcdctl add --learner, start, promote until it succeeds, endpoint health of the new member until it answers, move-leader, remove (same cluster)",
		ratioFigure: "clusterctl member replace / etcdctl's steps (medians)", target: "< 1x", met: func(x float64) bool { return x < 1 },
	})
}

// leaderMoveBound is the longest move of leadership to a member just promoted that shows no
// stall: a transfer whose invitation the member dropped, still a learner, waits out an election
// timeout (1 s) before raft is asked again.
const leaderMoveBound = 500 * time.Millisecond

// fillLeaderMove adds the row of clusterctl's move of leadership from the replaced leader to the
// member it just promoted (the step after the promotion), over every measured replacement.
func (r *report) fillLeaderMove(rs []replaceResult, warmup int) {
	var s samples
	for _, x := range rs {
		if x.CLI == "clusterctl" {
			s = append(s, x.StepsMS[2]-x.StepsMS[1])
		}
	}
	if len(s) == 0 {
		return
	}
	row := stat("member_replace_leader_move", "member replace: the move of leadership to the member just promoted", "ms", s, warmup,
		fmt.Sprintf("max < %d ms", leaderMoveBound.Milliseconds()))
	row.Met = ptr(row.Max < millis(leaderMoveBound))
	r.Rows = append(r.Rows, row)
}

// versus names the rows of a series timed with clusterctl and with etcdctl's steps.
type versus struct {
	key, figure, etcdKey, etcdFigure, ratioFigure, target string
	met                                                   func(ratio float64) bool
}

// fillVersus adds the rows of a series timed per CLI: clusterctl's (key_wall), etcdctl's on the
// same cluster (etcdKey_wall), and their ratio (key_vs_etcdctl) against v's target.
func (r *report) fillVersus(s map[string]samples, warmup int, v versus) {
	if len(s) == 0 {
		return
	}
	ctl := stat(v.key+"_wall", v.figure, "ms", s["clusterctl"], warmup, "report")
	e, ok := s["etcdctl"]
	if !ok {
		r.Rows = append(r.Rows, ctl)
		return
	}
	er := stat(v.etcdKey+"_wall", v.etcdFigure, "ms", e, warmup, "report")
	cmp := stat(v.key+"_vs_etcdctl", v.ratioFigure, "x", nil, warmup, v.target)
	cmp.Runs, cmp.Median, cmp.P99, cmp.Max = len(e), ctl.Median/er.Median, ctl.P99/er.P99, math.NaN()
	cmp.Met = ptr(v.met(cmp.Median))
	r.Rows = append(r.Rows, ctl, er, cmp)
}
