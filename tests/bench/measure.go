package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// rpcTimeout bounds one in-process request; on loopback each takes milliseconds.
const rpcTimeout = 5 * time.Second

// fsyncFloor appends 4 KiB records to a new file in the data dirs' file system and fdatasyncs
// after each: the least one durable raft write can cost here. The file grows like an append-only
// log, so each fdatasync also writes the new size, as it does for a log that is not preallocated.
func (b *bench) fsyncFloor(ctx context.Context) (samples, error) {
	// The members' data dirs are there too; the floor does not rely on a member having made it.
	if err := os.MkdirAll(filepath.Join(b.dir, "data"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(b.dir, "data", "fsync-floor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	record := make([]byte, 4096)
	for i := range record {
		record[i] = byte(i)
	}
	var s samples
	for i := range b.opt.warmup + b.opt.fsyncRuns {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		start := time.Now()
		if _, err := f.Write(record); err != nil {
			return nil, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return nil, err
		}
		if i >= b.opt.warmup {
			s = append(s, millis(time.Since(start)))
		}
	}
	return s, nil
}

// boltFloor commits one transaction per sample, each putting one 200-byte value under a new key,
// to a new database with the options of a member's: the least one bbolt commit, and so one step
// of a conf change (leader append, follower append, leader apply), costs here.
func (b *bench) boltFloor(ctx context.Context) (samples, error) {
	db, err := bolt.Open(filepath.Join(b.dir, "data", "bolt-floor.db"), 0o600, storage.BoltOptions())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	value := make([]byte, 200)
	var s samples
	for i := range b.opt.warmup + b.opt.fsyncRuns {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		start := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("floor"))
			if err != nil {
				return err
			}
			return bk.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), value)
		})
		if err != nil {
			return nil, err
		}
		if i >= b.opt.warmup {
			s = append(s, millis(time.Since(start)))
		}
	}
	return s, nil
}

// vmRSS reads the resident set of a process from /proc, in MiB.
func vmRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb / 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS line in /proc/%d/status", pid)
}

// tool is one CLI whose member list is timed.
type tool struct {
	key  string
	path string
	args []string
	// lines is what its first run must print, a check that it reached the cluster it was
	// meant to (0: not checked).
	lines int
}

// listRuns times whole `member list` processes of each tool, interleaved run by run so that any
// drift of the machine (page cache, frequency, a neighbour) falls on all of them alike.
func (b *bench) listRuns(ctx context.Context, tools []tool) (map[string][]runResult, error) {
	return b.listRunsN(ctx, tools, b.opt.listRuns)
}

// listRunsN is listRuns with n measured runs of each tool.
func (b *bench) listRunsN(ctx context.Context, tools []tool, n int) (map[string][]runResult, error) {
	res := map[string][]runResult{}
	for i := range b.opt.warmup + n {
		for j := range tools {
			// Rotating the order keeps any tool from always running right after another.
			t := tools[(i+j)%len(tools)]
			r, err := b.r.run(ctx, t.path, t.args...)
			if err != nil {
				return nil, err
			}
			if i == 0 && t.lines > 0 && strings.Count(r.stdout, "\n") != t.lines {
				return nil, fmt.Errorf("%s printed %q, want %d lines", t.key, r.stdout, t.lines)
			}
			if i >= b.opt.warmup {
				res[t.key] = append(res[t.key], r)
			}
		}
	}
	return res, nil
}

// peakRuns reads the peak RSS of `member list` processes of each tool, run through peakrss
// (see its doc: the bench cannot read it for its own children), interleaved and warmed up as in
// listRuns.
func (b *bench) peakRuns(ctx context.Context, tools []tool) (map[string]samples, error) {
	res := map[string]samples{}
	for i := range b.opt.warmup + b.opt.rssRuns {
		for j := range tools {
			t := tools[(i+j)%len(tools)]
			r, err := b.r.run(ctx, b.peakrss, append([]string{t.path}, t.args...)...)
			if err != nil {
				return nil, err
			}
			kib, err := strconv.ParseFloat(strings.TrimSpace(r.stdout), 64)
			if err != nil {
				return nil, fmt.Errorf("peakrss %s printed %q", t.key, r.stdout)
			}
			if i >= b.opt.warmup {
				res[t.key] = append(res[t.key], kib/1024)
			}
		}
	}
	return res, nil
}

var addedID = regexp.MustCompile(`Member\s+([0-9a-f]+) added`)

// addRemoveRuns times `member add NAME --peer-urls=URL --learner` followed by `member remove ID`,
// two processes per pair, for each CLI in turn. The learner is never started: the pair is what
// an operator's script pays for the two commands.
func (b *bench) addRemoveRuns(ctx context.Context, clis map[string]string, eps string) (map[string]samples, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range clis {
			if !yield(k) {
				return
			}
		}
	})
	res := map[string]samples{}
	for i := range b.opt.warmup + b.opt.changeRuns {
		for _, k := range keys {
			name := fmt.Sprintf("bench-%s-%d", k, i)
			add, err := b.r.run(ctx, clis[k], "--endpoints="+eps, "member", "add", name, "--peer-urls="+peer, "--learner")
			if err != nil {
				return nil, err
			}
			m := addedID.FindStringSubmatch(add.stdout)
			if m == nil {
				return nil, fmt.Errorf("%s member add printed %q: no member ID", k, add.stdout)
			}
			rm, err := b.r.run(ctx, clis[k], "--endpoints="+eps, "member", "remove", m[1])
			if err != nil {
				return nil, err
			}
			if i >= b.opt.warmup {
				res[k] = append(res[k], millis(add.wall+rm.wall))
			}
		}
	}
	return res, nil
}

// route is the member a client in this process sends its changes to.
type route int

const (
	viaLeader   route = iota // the member that decides: no forwarding hop
	viaFollower              // what clusterctl does when its first endpoint is not the leader
)

// confChangeRuns times single membership changes through pkg/client in this process, sent to the
// leader and then to a follower: a learner added, then removed, each a change of its own.
func (b *bench) confChangeRuns(ctx context.Context) (map[route]samples, error) {
	res := map[route]samples{}
	for _, via := range []route{viaLeader, viaFollower} {
		s, err := b.addRemoveLoop(ctx, via, b.opt.warmup+b.opt.confRuns, time.Time{})
		if err != nil {
			return nil, err
		}
		res[via] = s[2*b.opt.warmup:]
	}
	return res, nil
}

// addRemoveLoop adds a learner and removes it through pkg/client, sent via the leader or a
// follower, pairs times or until until (when it is not zero), whichever comes first, and
// returns the time of each change.
func (b *bench) addRemoveLoop(ctx context.Context, via route, pairs int, until time.Time) (samples, error) {
	return addRemoveLoopIn(ctx, b.c, via, pairs, until)
}

// addRemoveLoopIn is addRemoveLoop in any of the bench's clusters.
func addRemoveLoopIn(ctx context.Context, c *cluster.Cluster, via route, pairs int, until time.Time) (samples, error) {
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return nil, err
	}
	if via == viaFollower {
		ms[0], ms[1] = ms[1], ms[0]
	}
	cl, err := newClient(ms)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	peer := []string{"http://127.0.0.1:" + strconv.Itoa(ports[0])}
	var s samples
	for range pairs {
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		start := time.Now()
		add, err := cl.MemberAdd(cctx, "bench-inproc", peer, true)
		mid := time.Now()
		if err != nil {
			cancel()
			return nil, fmt.Errorf("member add: %w", err)
		}
		_, err = cl.MemberRemove(cctx, add.ID)
		end := time.Now()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("member remove: %w", err)
		}
		s = append(s, millis(mid.Sub(start)), millis(end.Sub(mid)))
	}
	return s, nil
}

// heartbeatInterval is the members' heartbeat interval (clusterd's and etcd's default).
const heartbeatInterval = 100 * time.Millisecond

// dephase pauses, untimed, for a random part of a heartbeat interval before a measured start
// of a new member. A new member waits for the leader's next heartbeat, which comes on the
// leader's own clock; a series of steps at a steady pace would start its members at much the
// same point of that clock run after run, and its median would be that point's, not the
// expected wait (two whole runs gave a dead member's replacement 0.68x and 1.17x of etcdctl's
// steps that way).
func dephase() { time.Sleep(rand.N(heartbeatInterval)) }

// fillResult says how the log was filled.
type fillResult struct {
	Changes   int     `json:"changes"`
	RaftIndex uint64  `json:"raft_index"`
	Seconds   float64 `json:"seconds"`
}

// fillLog commits membership changes until the leader's raft index reaches b.opt.entries: a
// learner that is never started has its peer URL updated back and forth. clusterd's only state
// is membership, so conf changes are the only entries a client can create; an update is one
// request per entry, where adding and removing a learner takes two requests for two entries and
// leaves an ID behind in the removed list each time.
func (b *bench) fillLog(ctx context.Context) (fillResult, error) {
	return fillLogIn(ctx, b.c, uint64(b.opt.entries), b.opt.fillTimeout)
}

// fillLogIn is fillLog in any of the bench's clusters, up to raft index entries.
func fillLogIn(ctx context.Context, c *cluster.Cluster, entries uint64, timeout time.Duration) (fillResult, error) {
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return fillResult{}, err
	}
	cl, err := newClient(ms)
	if err != nil {
		return fillResult{}, err
	}
	defer cl.Close()
	ports, err := freeport.Ports(2)
	if err != nil {
		return fillResult{}, err
	}
	urls := [2][]string{
		{"http://127.0.0.1:" + strconv.Itoa(ports[0])},
		{"http://127.0.0.1:" + strconv.Itoa(ports[1])},
	}
	start := time.Now()
	deadline := start.Add(timeout)
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	ghost, err := cl.MemberAdd(cctx, "filler", urls[0], true)
	cancel()
	if err != nil {
		return fillResult{}, fmt.Errorf("member add filler: %w", err)
	}
	res := fillResult{Changes: 1}
	// Each update commits one entry, so that many updates are always enough; the raft index
	// is read every 200 changes to stop as soon as the log is long enough.
	for i := 1; uint64(i) <= entries; i++ {
		if i%200 == 0 {
			st, err := cluster.Status(ms[0]) // the leader
			if err != nil {
				return res, err
			}
			res.RaftIndex = st.GetRaftIndex()
			if res.RaftIndex >= entries {
				break
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("filling the log: %d changes, raft index %d after %v; want %d entries (raise -fill-timeout or lower -entries)",
				res.Changes, res.RaftIndex, timeout, entries)
		}
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		_, err := cl.MemberUpdate(cctx, ghost.ID, urls[i%2])
		cancel()
		if err != nil {
			return res, fmt.Errorf("member update filler (change %d): %w", i, err)
		}
		res.Changes++
	}
	cctx, cancel = context.WithTimeout(ctx, rpcTimeout)
	_, err = cl.MemberRemove(cctx, ghost.ID)
	cancel()
	if err != nil {
		return res, fmt.Errorf("member remove filler: %w", err)
	}
	res.Changes++
	st, err := cluster.Status(ms[0]) // the leader
	if err != nil {
		return res, err
	}
	res.RaftIndex = st.GetRaftIndex()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// learnerResult is one learner's way from process start to promotion.
type learnerResult struct {
	Name      string  `json:"name"`
	StartedAt string  `json:"started_at"` // wall clock, to line up with the members' logs
	ReadyMS   float64 `json:"ready_ms"`
	Attempts  int     `json:"promote_attempts"`
}

// learnerReady adds a learner with `clusterctl member add -w env`, starts its process with the
// printed environment, and asks the leader to promote it every promoteInterval until it accepts.
// The figure runs from just before the process is started until the promote succeeded.
func (b *bench) learnerReady(ctx context.Context, name string) (learnerResult, error) {
	return b.learnerReadyIn(ctx, b.c, name)
}

// learnerReadyIn is learnerReady for any of the bench's clusters, clusterd's or etcd's.
func (b *bench) learnerReadyIn(ctx context.Context, c *cluster.Cluster, name string) (learnerResult, error) {
	res := learnerResult{Name: name}
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return res, err
	}
	m, err := c.Alloc(name)
	if err != nil {
		return res, err
	}
	out, err := b.r.run(ctx, b.clusterctl, "--endpoints="+cluster.Endpoints(ms), "member", "add", name,
		"--peer-urls="+m.PeerURL, "--learner", "-w", "env")
	if err != nil {
		return res, err
	}
	env, err := cluster.ParseEnv(out.stdout)
	if err != nil {
		return res, fmt.Errorf("member add -w env printed %q: %v", out.stdout, err)
	}
	cl, err := newClient(ms)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	list, err := cl.MemberList(cctx, true)
	cancel()
	if err != nil {
		return res, err
	}
	var id uint64
	for _, x := range list.Members {
		if slices.Contains(x.PeerURLs, m.PeerURL) {
			id = x.ID
		}
	}
	if id == 0 {
		return res, fmt.Errorf("%s (%s) is not in the member list after member add", name, m.PeerURL)
	}
	dephase()
	start := time.Now()
	res.StartedAt = start.UTC().Format(time.RFC3339Nano)
	if err := c.Start(name, m.ListenArgs(), env); err != nil {
		return res, err
	}
	const promoteInterval = 2 * time.Millisecond
	deadline := start.Add(30 * time.Second)
	var last error
	// Bounded by the deadline and, since every attempt waits promoteInterval, by a count. The
	// fixed pace is part of the figure, whose resolution it sets: a growing interval, as a
	// condition wait would use, would add up to its own length to the time measured.
	for attempt := 0; attempt < int(30*time.Second/promoteInterval); attempt++ {
		if !m.Running() {
			e, _ := c.WaitExit(name, 0)
			return res, fmt.Errorf("learner %s exited (%v): %s", name, e, proc.Tail(m.Stderr, 10))
		}
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		_, err := cl.MemberPromote(cctx, id)
		cancel()
		res.Attempts++
		if err == nil {
			res.ReadyMS = millis(time.Since(start))
			return res, nil
		}
		last = err
		var se *client.ServerError
		if !errors.As(err, &se) || !errors.Is(err, rpcerr.ErrLearnerNotReady) {
			// Anything but "not in sync yet" is worth seeing in the failure, but retried: a
			// leader change during the start is possible and not the learner's fault.
			last = fmt.Errorf("attempt %d: %w", attempt, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(promoteInterval)
	}
	return res, fmt.Errorf("learner %s not promoted within 30s: %v", name, last)
}

// removalResult is one leader removal as a client with every endpoint saw it.
type removalResult struct {
	LongestGapMS float64 `json:"longest_gap_ms"`
	Successes    int     `json:"successes"`
	// SuccessesAfter counts the lists that succeeded after the removal was answered: without
	// one the gap has no end and the run fails.
	SuccessesAfter int `json:"successes_after_removal"`
	Failures       int `json:"failures"`
	// GapFromMS is when the longest gap began, relative to the start of the removal request.
	GapFromMS  float64 `json:"gap_from_ms"`
	RemoveMS   float64 `json:"remove_ms"` // how long MemberRemove of the leader took
	ExitStatus string  `json:"removed_member_exit"`
	NewLeader  string  `json:"new_leader"` // the member that leads after the removal
	FirstError string  `json:"first_error,omitempty"`
}

// longestGap returns the longest stretch of [begin, end] in which the reader had no successful
// list, and when it began. ok are the times successful lists returned, in order. The stretches
// are begin to the first success, each success to the next, and the last success to end: a
// reader that stops getting answers goes without them until the loop ends, and leaving out that
// trailing stretch would report only the gaps before it. It fails unless a list succeeded after
// answered, when the removal was answered: otherwise the cluster was never seen serving again
// and no gap measured so far says how long it took.
func longestGap(begin time.Time, ok []time.Time, answered, end time.Time) (gap time.Duration, from time.Time, err error) {
	prev := begin
	after := 0
	for _, t := range ok {
		if d := t.Sub(prev); d > gap {
			gap, from = d, prev
		}
		if t.After(answered) {
			after++
		}
		prev = t
	}
	if d := end.Sub(prev); d > gap {
		gap, from = d, prev
	}
	if after == 0 {
		return gap, from, fmt.Errorf("no member list succeeded after the removal was answered (%d before it; %v from the last success to the end of the loop)",
			len(ok), end.Sub(prev).Round(time.Millisecond))
	}
	return gap, from, nil
}

// The windows in which leaderRemoval's reader is watched before the removal and after the
// cluster serves again.
const (
	baselineWindow = 300 * time.Millisecond
	tailWindow     = 500 * time.Millisecond
)

// leaderRemoval removes the leader while one client with every running member's endpoint (the
// leader's first, so it has to move on) lists the members linearizably in a loop, and returns
// the longest time without a successful list (see longestGap).
func (b *bench) leaderRemoval(ctx context.Context) (removalResult, error) {
	return b.leaderRemovalIn(ctx, b.c)
}

// leaderRemovalIn is leaderRemoval in any of the bench's clusters.
func (b *bench) leaderRemovalIn(ctx context.Context, c *cluster.Cluster) (removalResult, error) {
	ms, leaderID, err := leaderFirstOf(c)
	if err != nil {
		return removalResult{}, err
	}
	leader := ms[0]
	reader, err := newClient(ms)
	if err != nil {
		return removalResult{}, err
	}
	defer reader.Close()
	stop := make(chan struct{})
	done := make(chan listOutcome, 1)
	var lastOK atomic.Int64 // UnixNano of the latest successful list, for the wait below
	go func() {
		o := listOutcome{begin: time.Now()}
		// Bounded by time and count: at most 20 s and 200,000 lists.
		until := o.begin.Add(20 * time.Second)
	loop:
		for range 200000 {
			select {
			case <-stop:
				break loop
			default:
			}
			if time.Now().After(until) {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := reader.MemberList(cctx, true)
			cancel()
			if err == nil {
				now := time.Now()
				o.ok = append(o.ok, now)
				lastOK.Store(now.UnixNano())
			} else {
				if o.failures == 0 {
					o.first = err
				}
				o.failures++
			}
		}
		o.end = time.Now()
		done <- o
	}()
	finish := func() listOutcome { close(stop); return <-done }

	// A baseline of successes before the removal shows the loop's own pace: this window is part
	// of what is measured, not a wait for anything.
	if err := sleepCtx(ctx, baselineWindow); err != nil {
		finish()
		return removalResult{}, err
	}
	remover, err := newClient(ms)
	if err != nil {
		finish()
		return removalResult{}, err
	}
	defer remover.Close()
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	rmStart := time.Now()
	_, err = remover.MemberRemove(cctx, leaderID)
	answered := time.Now()
	cancel()
	if err != nil {
		finish()
		return removalResult{}, fmt.Errorf("member remove %016x (the leader, %s): %w", leaderID, leader.Name, err)
	}
	return afterRemoval(ctx, c, leader.Name, rmStart, answered, &lastOK, tailWindow, finish)
}
