package chaos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/anishathalye/porcupine"

	"github.com/clusterctl/clusterctl/pkg/datadir"
)

var (
	flagDuration = flag.Duration("duration", 40*time.Second, "how long clients and faults run; healing and checking come on top")
	flagSeed     = flag.Uint64("seed", 0, "seed of the run's choices; 0 picks one (printed first)")
	flagMembers  = flag.Int("members", 3, "members at the start")
	flagSlots    = flag.Int("slots", 5, "most members at once, each with fixed ports")
	flagClients  = flag.Int("clients", 3, "concurrent clients changing the membership")
	flagLanes    = flag.Int("fault-lanes", 2, "faults running at once")
	flagRace     = flag.Bool("race-server", false, "build clusterd with -race")
	flagKeep     = flag.Bool("keep", false, "keep data dirs and logs even when the test passes")
	flagCheck    = flag.Duration("check-timeout", 5*time.Minute, "time the linearizability check may take")
	flagVoters   = flag.Int("voters", 0, "the shape: most voters at once, and the members at the start; 0 keeps -members and -slots")
	flagLearners = flag.Int("learners", 1, "most learners at once (--max-learners); with -voters, slots are voters plus learners")
	flagTLS      = flag.Bool("tls", true, "TLS with client-certificate authentication on both ports of every member (make test's run has it; -tls=false for plain http)")
	flagFaults   = flag.String("faults", "all", "fault kinds, comma-separated with - for spaces (kill-leader,crash-point,...), or all")
)

// TestChaos churns the membership of real clusterd processes under faults and checks what the
// clients saw (see doc.go).
func TestChaos(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	// An interrupt (Ctrl-C, SIGTERM) ends the churn and then the test, whose cleanups stop every
	// member and undo every mount: the members have process groups of their own, and a signal
	// left to its default would end the test and leave them running.
	sigCtx, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	fmt.Fprintf(os.Stderr, "chaos: seed %d\n", seed)
	members, slots, maxVoters := *flagMembers, *flagSlots, *flagSlots
	if *flagVoters > 0 {
		members, slots, maxVoters = *flagVoters, *flagVoters+*flagLearners, *flagVoters
	}
	if members < 1 || members > slots {
		t.Fatalf("-members %d must be between 1 and -slots %d", members, slots)
	}
	kinds, err := faultSet(*flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(kinds, "full disk") {
		if why := mountProbe(os.TempDir()); why != "" {
			t.Logf("the full-disk fault is left out: %s", why)
			kinds = without(kinds, "full disk")
		}
	}
	if !*flagTLS {
		kinds = without(kinds, "rotate certs")
	}
	t.Logf("shape: %d members at the start, at most %d voters and %d learners, TLS %v; faults: %s", members, maxVoters, *flagLearners, *flagTLS, strings.Join(slices.Compact(slices.Clone(kinds)), ", "))

	dir, err := os.MkdirTemp("", "clusterd-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || *flagKeep {
			t.Logf("data dirs, logs and history kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	bin, err := buildClusterd(dir, *flagRace)
	if err != nil {
		t.Fatal(err)
	}
	var pki *clusterPKI
	if *flagTLS {
		var creds credentials.TransportCredentials
		if pki, creds, err = newPKI(dir, slots); err != nil {
			t.Fatal(err)
		}
		transportCreds = creds
		t.Cleanup(func() { transportCreds = insecure.NewCredentials() })
	}
	cfg := settings{
		bin: bin, dir: dir, slots: slots, maxVoters: maxVoters,
		heartbeat: 50 * time.Millisecond, election: 500 * time.Millisecond,
		// Small, so that snapshots, compaction and catching up from a snapshot happen all along.
		snapshotCount: 8,
		maxLearners:   *flagLearners,
		settle:        10 * time.Second, removalDeadline: 30 * time.Second,
		cameBackWithin: 30 * time.Second,
	}
	c, err := newCluster(cfg, pki, seed, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slots:\n%s\nthe test's last events (all of them in %s):\n%s", c.describeSlots(), filepath.Join(dir, "events.log"), c.events.last())
		}
	})
	rec := newRecorder()
	t.Cleanup(rec.close)

	if err := c.bootstrap(members); err != nil {
		t.Fatal(err)
	}
	initial := waitFirstList(t, c, rec, members)

	// Fault kind to *[2]int: injected, and survived (no failure recorded while it ran).
	var faults sync.Map
	countFault := func(kind string, survived bool) {
		v, _ := faults.LoadOrStore(kind, new([2]int))
		c.mu.Lock()
		v.(*[2]int)[0]++
		if survived {
			v.(*[2]int)[1]++
		}
		c.mu.Unlock()
	}

	// The reconciler lists the membership all along and keeps the processes in line with it.
	recCtx, stopRec := context.WithCancel(context.Background())
	recDone := make(chan struct{})
	go func() {
		defer close(recDone)
		reconcileLoop(recCtx, c, rec, seed)
	}()
	t.Cleanup(func() { stopRec(); <-recDone })

	// Clients and faults, for -duration, or until an interrupt.
	runCtx, stopRun := context.WithTimeout(sigCtx, *flagDuration)
	defer stopRun()
	runStart := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *flagClients; i++ {
		rnd := rand.New(rand.NewPCG(seed, uint64(10+i)))
		wg.Add(1)
		go func() { defer wg.Done(); churn(runCtx, c, rec, 1+i, rnd) }()
	}
	for i := 0; i < *flagLanes; i++ {
		f := &injector{c: c, rec: rec, rnd: rand.New(rand.NewPCG(seed, uint64(100+i))), client: *flagClients + 1 + i, count: countFault, kinds: kinds}
		wg.Add(1)
		go func() { defer wg.Done(); f.run(runCtx) }()
	}
	wg.Wait()
	if sigCtx.Err() != nil {
		t.Fatalf("interrupted after %v: the members are stopped and the mounts undone as the test ends", time.Since(runStart).Round(time.Second))
	}
	c.net.healAll()
	c.events.add("churn and faults over; healing")
	t.Logf("churn and faults over after %v; healing", *flagDuration)

	// Restarts whose came-back check the end of the run cut short are checked now, while the
	// cluster heals.
	deferredDone := make(chan struct{})
	go func() { defer close(deferredDone); c.checkDeferred() }()
	// The clients and the fault lanes are done: the healer takes the next client number.
	final := waitHealed(t, c, rec, *flagClients+1+*flagLanes, 90*time.Second)
	<-deferredDone
	stopRec()
	<-recDone
	if final == nil {
		t.Logf("slots:\n%s\ngoroutines of the members still running (each ended with SIGQUIT):\n%s", c.describeSlots(), c.dumpStacks())
	}

	report(t, c, rec, &faults)
	if final != nil {
		checkFinal(t, c, rec, final)
	}
	c.stopAll(true)
	checkLogs(t, c)
	checkDataDirs(t, dir)
	checkHistory(t, rec, initial, cfg, dir)
	checked, failures := c.checkLiveQuorum(rec)
	t.Logf("live quorum: %d accepted voter adds checked, %d failed", checked, len(failures))
	for _, f := range failures {
		t.Error(f)
	}
	for _, f := range c.failures {
		t.Error(f)
	}
}

// waitFirstList waits for the bootstrapped members to form a cluster and returns the first
// membership, the model's initial state.
func waitFirstList(t *testing.T, c *cluster, rec *recorder, n int) []mem {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, addr := range c.liveClients() {
			_, v, _ := rec.do(context.Background(), 0, addr, input{Kind: opList}, 2*time.Second)
			if v == nil || len(v.members) != n {
				continue
			}
			c.observe(v)
			return v.members
		}
		sleep(context.Background(), 100*time.Millisecond)
	}
	t.Fatalf("the %d bootstrapped members did not answer a linearizable list within 30s", n)
	return nil
}

// reconcileLoop lists the membership through a random live member every 200 ms and hands each
// answer to the cluster, in order: one list at a time, so each is newer than the last. Its
// choices are a stream of the run's seed, like every other choice of the test.
func reconcileLoop(ctx context.Context, c *cluster, rec *recorder, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 0x6c69737473)) // "lists"
	for ctx.Err() == nil {
		addrs := c.liveClients()
		if len(addrs) > 0 {
			_, v, _ := rec.do(ctx, 0, addrs[rnd.IntN(len(addrs))], input{Kind: opList}, 3*time.Second)
			if v != nil {
				c.observe(v)
			} else if v, err := serializableView(addrs[rnd.IntN(len(addrs))]); err == nil {
				c.observeStale(v)
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// ghostOf returns a member made by an add meant to be refused (named dup*), if a view shows one.
func ghostOf(v *view) (uint64, bool) {
	for _, m := range v.members {
		if strings.HasPrefix(m.Name, "dup") {
			return m.ID, true
		}
	}
	return 0, false
}

// churn is one client: adds (voters and learners, by name), removes, promotes, updates and
// lists, against random members, until ctx ends.
func churn(ctx context.Context, c *cluster, rec *recorder, client int, rnd *rand.Rand) {
	const timeout = 4 * time.Second
	dup := 0
	for ctx.Err() == nil {
		sleep(ctx, between(rnd, 10*time.Millisecond, 250*time.Millisecond))
		sn := c.snapshot()
		if sn.view == nil || len(sn.clients) == 0 {
			continue
		}
		addr := pick(rnd, sn.clients)
		// An add with a URL in use is meant to be refused, but its URL comes from a list that may
		// predate an update or removal that freed it: then it succeeds, and the learner it made
		// has no process. Remove such a member as soon as a list shows it.
		if ghost, ok := ghostOf(sn.view); ok {
			rec.do(ctx, client, addr, input{Kind: opRemove, ID: ghost}, timeout)
			continue
		}
		var voters, learners []mem
		for _, m := range sn.view.members {
			if m.Learner {
				learners = append(learners, m)
			} else {
				voters = append(voters, m)
			}
		}
		r := rnd.IntN(100)
		switch {
		case r < 3 && len(sn.view.members) > 0:
			// A URL in use: must be refused, and change nothing. Always as a learner: when the
			// URL was freed meanwhile the add succeeds, and a ghost voter added to a cluster of
			// one voter (which the strict check allows) would be needed for every commit after
			// it, while its URL is a slot's other port, whose process is another member, so
			// no process could ever be started for it. A ghost learner holds no vote.
			dup++
			m := sn.view.members[rnd.IntN(len(sn.view.members))]
			rec.do(ctx, client, addr, input{Kind: opAdd, Name: fmt.Sprintf("dup%d-%d", client, dup), URL: m.URL, Learner: true}, timeout)
		case r < 28:
			s := c.reserve(rnd)
			if s == nil {
				continue
			}
			// A voter past the shape's most voters is added as a learner instead.
			in := input{Kind: opAdd, Name: s.name, URL: s.url, Learner: rnd.IntN(3) == 0 || len(voters) >= c.cfg.maxVoters}
			out, after, sent := rec.do(ctx, client, addr, in, timeout)
			if !sent {
				out = output{Err: "not sent"}
			}
			c.added(s, out, after, time.Now())
		case r < 43:
			var cands []mem
			cands = append(cands, learners...)
			if len(voters) >= 4 {
				cands = append(cands, voters...)
			}
			id := uint64(0)
			switch {
			case rnd.IntN(20) == 0:
				id = rnd.Uint64() | 1 // never a member
			case len(cands) > 0:
				id = cands[rnd.IntN(len(cands))].ID
			default:
				continue
			}
			rec.do(ctx, client, addr, input{Kind: opRemove, ID: id}, timeout)
		case r < 53:
			cands := learners
			if rnd.IntN(5) == 0 || len(cands) == 0 || len(voters) >= c.cfg.maxVoters {
				cands = voters // refused: only a learner can be promoted
			}
			if len(cands) == 0 {
				continue
			}
			rec.do(ctx, client, addr, input{Kind: opPromote, ID: cands[rnd.IntN(len(cands))].ID}, timeout)
		case r < 60:
			m := sn.view.members[rnd.IntN(len(sn.view.members))]
			s := c.slotOf(m.URL)
			if s == nil {
				continue
			}
			// Move it to its slot's other proxy port: both lead to the same process.
			u := s.urls()
			next := u[0]
			if m.URL == u[0] {
				next = u[1]
			}
			rec.do(ctx, client, addr, input{Kind: opUpdate, ID: m.ID, URL: next}, timeout)
		default:
			rec.do(ctx, client, addr, input{Kind: opList}, timeout)
		}
	}
}

// waitHealed waits, after the faults, until every member of the membership runs and has
// started, no add is of unknown outcome, every removed member is gone, and every member answers
// a serializable list equal to the latest linearizable one. It returns that membership.
//
// A member made by an add meant to be refused has no process and never starts: the clients
// remove it as soon as a list shows it, but one that took effect as they stopped is still
// there, so the healer, client number healer of the history, removes it as they would.
func waitHealed(t *testing.T, c *cluster, rec *recorder, healer int, within time.Duration) *view {
	healStart := time.Now()
	deadline := healStart.Add(within)
	var why string
	for time.Now().Before(deadline) {
		sleep(context.Background(), 200*time.Millisecond)
		if latest := c.latestView(); latest != nil {
			if ghost, ok := ghostOf(latest); ok {
				if addrs := c.liveClients(); len(addrs) > 0 {
					rec.do(context.Background(), healer, addrs[0], input{Kind: opRemove, ID: ghost}, 4*time.Second)
				}
			}
		}
		v, ok := c.settled(healStart)
		if !ok {
			why = v
			continue
		}
		return c.latestView()
	}
	t.Errorf("the cluster did not heal within %v after the faults: %s", within, why)
	return nil
}

// settled reports whether the cluster is quiet, or what it still waits for.
func (c *cluster) settled(after time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.latest
	if v == nil || v.callAt.Before(after) {
		return "no linearizable list since the faults ended", false
	}
	for _, m := range v.members {
		if !v.started[m.ID] {
			return fmt.Sprintf("%s (%016x) has not started", m.Name, m.ID), false
		}
	}
	for _, s := range c.slots {
		switch s.state {
		case slotAdding, slotPending, slotRemoved:
			return fmt.Sprintf("slot %d (%s) is %d", s.idx, s.name, s.state), false
		case slotMember:
			if s.proc == nil || s.proc.exited() {
				return fmt.Sprintf("%s has no process", s.name), false
			}
		}
	}
	return "", true
}

// checkFinal compares every member's own (serializable) list with the final linearizable one,
// retrying until they agree or time runs out: a member may still be applying.
func checkFinal(t *testing.T, c *cluster, rec *recorder, final *view) {
	removed := map[uint64]bool{}
	rec.mu.Lock()
	for _, h := range rec.history {
		if h.in.Kind == opRemove && !h.out.Unknown && h.out.Err == "" {
			removed[h.in.ID] = true
		}
	}
	rec.mu.Unlock()
	for _, m := range final.members {
		if removed[m.ID] {
			t.Errorf("removed member %016x is back in the final membership", m.ID)
		}
	}
	sn := c.snapshot()
	for id, addr := range sn.clients {
		if _, ok := final.member(id); !ok {
			continue
		}
		deadline := time.Now().Add(20 * time.Second)
		var got []mem
		var err error
		for time.Now().Before(deadline) {
			var v *view
			if v, err = serializableView(addr); err == nil {
				got = v.members
			}
			if err == nil && slices.Equal(got, final.members) {
				break
			}
			sleep(context.Background(), 100*time.Millisecond)
		}
		if err != nil || !slices.Equal(got, final.members) {
			t.Errorf("member %016x lists %v (err %v), the final membership is %v", id, got, err, final.members)
		}
	}
}

// serializableView is one member's own view of the membership, with no leader involved.
func serializableView(addr string) (*view, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(transportCreds))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var header metadata.MD
	resp, err := pb.NewClusterClient(cc).MemberList(ctx, &pb.MemberListRequest{}, grpc.Header(&header))
	if err != nil {
		return nil, err
	}
	return toView(resp, header)
}

// checkLogs looks through every member's log for a panic or a race.
func checkLogs(t *testing.T, c *cluster) {
	logs, _ := filepath.Glob(filepath.Join(c.cfg.dir, "logs", "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, bad := range []string{"panic:", "fatal error:", "WARNING: DATA RACE"} {
			if i := strings.Index(string(b), bad); i >= 0 {
				end := min(len(b), i+2000)
				t.Errorf("%s has %q:\n%s", l, bad, b[i:end])
			}
		}
	}
}

// checkHistory checks the recorded history for linearizability against the model.
func checkHistory(t *testing.T, rec *recorder, initial []mem, cfg settings, dir string) {
	rec.mu.Lock()
	history := slices.Clone(rec.history)
	unexpected := slices.Clone(rec.unexpected)
	rec.mu.Unlock()
	for _, u := range unexpected {
		t.Errorf("an error that neither docs/exit-codes.md nor the error tables of docs/commands/member-*.md list: %s", u)
	}
	ops, problems := operations(history)
	for _, p := range problems {
		t.Error(p)
	}
	model := membershipModel(initial, cfg.maxLearners)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, *flagCheck)
	t.Logf("linearizability of %d operations: %s in %v", len(ops), res, time.Since(start).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(dir, "history.html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			t.Errorf("the history is not linearizable; see %s", path)
		} else {
			t.Errorf("the history is not linearizable (visualization failed: %v)", err)
		}
		dumpHistory(t, ops, filepath.Join(dir, "history.txt"))
	default:
		t.Errorf("the linearizability check did not finish within %v", *flagCheck)
		dumpHistory(t, ops, filepath.Join(dir, "history.txt"))
	}
}

func dumpHistory(t *testing.T, ops []porcupine.Operation, path string) {
	sorted := slices.Clone(ops)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		ret := "inf"
		if op.Return != 1<<63-1 {
			ret = time.Duration(op.Return).String()
		}
		fmt.Fprintf(&b, "c%-3d %12v %12s  %s\n", op.ClientId, time.Duration(op.Call), ret, describe(op.Input.(input), op.Output.(output)))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Log(err)
	}
}

// report logs what the run did.
func report(t *testing.T, c *cluster, rec *recorder, faults *sync.Map) {
	rec.mu.Lock()
	ops := len(rec.history)
	var keys []string
	for k := range rec.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("  %-70s %d", k, rec.counts[k]))
	}
	rec.mu.Unlock()
	c.mu.Lock()
	var kinds, fl []string
	faults.Range(func(k, v any) bool {
		n := v.(*[2]int)
		kinds = append(kinds, fmt.Sprintf("  %-30s injected %4d, survived %4d", k, n[0], n[1]))
		return true
	})
	for k, v := range c.stats {
		fl = append(fl, fmt.Sprintf("  %-70s %d", k, v))
	}
	c.mu.Unlock()
	sort.Strings(fl)
	sort.Strings(kinds)
	t.Logf("operations recorded: %d\n%s", ops, strings.Join(lines, "\n"))
	t.Logf("faults (survived: no failure recorded while it ran):\n%s", strings.Join(kinds, "\n"))
	t.Logf("what the faults and the reconciler did:\n%s\n  proxy: %d connections, %d cut, %d from an unknown source",
		strings.Join(fl, "\n"), c.net.accepted.Load(), c.net.cut.Load(), c.net.unknownSource.Load())
	t.Logf("%s", cameBackReport(c))
}

// cameBackReport is the came-back checks of members restarted after kill -9, checked, skipped
// (and why) and failed, so that a run whose checks were mostly skipped shows it.
func cameBackReport(c *cluster) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var outcomes []string
	total, done, skipped := 0, 0, 0
	for k, n := range c.cameBack {
		outcomes = append(outcomes, fmt.Sprintf("  %-70s %d", k, n))
		total += n
		switch {
		case strings.HasPrefix(k, "checked:"):
			done += n
		case strings.HasPrefix(k, "skipped:"), strings.HasPrefix(k, "not restarted:"):
			skipped += n
		}
	}
	sort.Strings(outcomes)
	return fmt.Sprintf("restarted members came back: %d restarts, %d checked, %d skipped, %d failed (%d of them after the faults ended)\n%s",
		total, done, skipped, total-done-skipped, c.cameBackAfterRun, strings.Join(outcomes, "\n"))
}

// checkDataDirs runs datadir check on every data directory the run left, the members stopped:
// whatever the faults did, each stores the membership raft believes.
func checkDataDirs(t *testing.T, dir string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(dir, "data", "*"))
	checked := 0
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "member.db")); err != nil {
			continue
		}
		r, err := datadir.Check(d)
		if err != nil {
			t.Errorf("datadir check %s: %v", d, err)
			continue
		}
		for _, p := range r.Problems {
			t.Errorf("datadir check %s: %s", d, p)
		}
		checked++
	}
	t.Logf("datadir check: %d data directories", checked)
}
