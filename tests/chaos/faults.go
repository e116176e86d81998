package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// sleep waits d or until ctx ends. It shapes the load and the length of faults; nothing waits
// with it for something to happen.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func between(rnd *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
}

// injector runs faults, one lane at a time; two lanes overlap.
type injector struct {
	c      *cluster
	rec    *recorder
	rnd    *rand.Rand
	client int // its client number in the history
	count  func(kind string, survived bool)
	kinds  []string // drawn from with equal chance
}

// faultKinds are every fault and its weight: restarting every member takes the whole cluster
// down for a while, and a snapshot catch-up holds a member for up to a minute, so they come half
// as often as the others.
var faultKinds = []struct {
	kind   string
	weight int
}{
	{"kill leader", 2}, {"kill follower", 2}, {"pause leader", 2}, {"pause follower", 2},
	{"isolate leader", 2}, {"split", 2}, {"drop peer traffic", 2}, {"delay peer traffic", 2},
	{"remove leader", 2}, {"restart all", 1}, {"crash point", 2}, {"snapshot catch-up", 1}, {"full disk", 1}, {"rotate certs", 1},
	{"forged notice", 2}, {"forged identity", 1},
}

// faultSet reads -faults: "all", or kinds with - for spaces, separated by commas. It returns
// the kinds, each as often as its weight.
func faultSet(spec string) ([]string, error) {
	want := map[string]bool{}
	all := spec == "all"
	if !all {
		for _, k := range strings.Split(spec, ",") {
			want[strings.TrimSpace(k)] = true
		}
	}
	var out []string
	for _, fk := range faultKinds {
		flag := strings.ReplaceAll(fk.kind, " ", "-")
		if all || want[flag] {
			delete(want, flag)
			for range fk.weight {
				out = append(out, fk.kind)
			}
		}
	}
	for k := range want {
		if k != "" {
			var names []string
			for _, fk := range faultKinds {
				names = append(names, strings.ReplaceAll(fk.kind, " ", "-"))
			}
			return nil, fmt.Errorf("-faults: no fault %q; there are %s", k, strings.Join(names, ","))
		}
	}
	return out, nil
}

// failureCount is how many failures the run has recorded so far.
func (c *cluster) failureCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.failures)
}

// without is kinds less every kind named drop.
func without(kinds []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == drop })
}

// run injects faults until ctx ends. Every fault heals before the next one starts, and before
// run returns.
func (f *injector) run(ctx context.Context) {
	for ctx.Err() == nil {
		sleep(ctx, between(f.rnd, 300*time.Millisecond, 2*time.Second))
		if ctx.Err() != nil {
			return
		}
		if len(f.kinds) == 0 {
			return
		}
		kind := f.kinds[f.rnd.IntN(len(f.kinds))]
		f.c.events.add("fault lane %d: %s begins", f.client, kind)
		before := f.c.failureCount()
		if f.inject(ctx, kind) {
			f.count(kind, f.c.failureCount() == before)
		}
		f.c.events.add("fault lane %d: %s over", f.client, kind)
	}
}

// leaderSlot is the slot of the leader of the latest list, or -1.
func (f *injector) leaderSlot(sn snapshot) int {
	if sn.view == nil || sn.view.leader == 0 {
		return -1
	}
	if idx, ok := sn.slotOf[sn.view.leader]; ok {
		return idx
	}
	return -1
}

func (f *injector) followerSlot(sn snapshot) int { return f.followerOf(sn, false) }

// followerOf is a random follower's slot, a voter's if voter (clients remove learners at every
// turn, and a fault that lasts a while would mostly see its member removed), or -1.
func (f *injector) followerOf(sn snapshot, voter bool) int {
	lead := f.leaderSlot(sn)
	var out []int
	for id := range sn.clients {
		if voter {
			if m, ok := sn.view.member(id); !ok || m.Learner {
				continue
			}
		}
		if idx := sn.slotOf[id]; idx != lead {
			out = append(out, idx)
		}
	}
	if len(out) == 0 {
		return -1
	}
	sortInts(out)
	return out[f.rnd.IntN(len(out))]
}

func (f *injector) inject(ctx context.Context, kind string) bool {
	sn := f.c.snapshot()
	switch kind {
	case "kill leader", "kill follower":
		idx := f.leaderSlot(sn)
		if kind == "kill follower" {
			idx = f.followerSlot(sn)
		}
		return idx >= 0 && f.killRestart(ctx, []int{idx})
	case "pause leader", "pause follower":
		idx := f.leaderSlot(sn)
		if kind == "pause follower" {
			idx = f.followerSlot(sn)
		}
		if idx < 0 {
			return false
		}
		p := f.c.hold(idx)
		if p == nil {
			return false
		}
		p.pause()
		sleep(ctx, between(f.rnd, 300*time.Millisecond, 3*time.Second))
		p.resume()
		f.c.release(idx, false)
		return true
	case "isolate leader":
		lead := f.leaderSlot(sn)
		if lead < 0 {
			return false
		}
		rules := map[link]rule{}
		for i := 0; i < f.c.cfg.slots; i++ {
			if i != lead {
				rules[linkOf(lead, i)] = rule{block: true}
			}
		}
		return f.network(ctx, rules, 500*time.Millisecond, 4*time.Second)
	case "split":
		side := make([]bool, f.c.cfg.slots)
		for i := range side {
			side[i] = f.rnd.IntN(2) == 0
		}
		rules := map[link]rule{}
		for i := range side {
			for j := i + 1; j < len(side); j++ {
				if side[i] != side[j] {
					rules[linkOf(i, j)] = rule{block: true}
				}
			}
		}
		return len(rules) > 0 && f.network(ctx, rules, 500*time.Millisecond, 4*time.Second)
	case "drop peer traffic", "delay peer traffic":
		rules := map[link]rule{}
		for i := 0; i < f.c.cfg.slots; i++ {
			for j := i + 1; j < f.c.cfg.slots; j++ {
				if f.rnd.IntN(2) == 0 {
					continue
				}
				if kind == "drop peer traffic" {
					rules[linkOf(i, j)] = rule{drop: 0.02 + 0.2*f.rnd.Float64()}
				} else {
					rules[linkOf(i, j)] = rule{delay: between(f.rnd, 10*time.Millisecond, 150*time.Millisecond)}
				}
			}
		}
		return len(rules) > 0 && f.network(ctx, rules, time.Second, 5*time.Second)
	case "remove leader":
		if sn.view == nil || sn.view.leader == 0 || len(sn.clients) == 0 {
			return false
		}
		voters := 0
		for _, m := range sn.view.members {
			if !m.Learner {
				voters++
			}
		}
		if voters < 4 {
			return false
		}
		addr := pick(f.rnd, sn.clients)
		f.rec.do(ctx, f.client, addr, input{Kind: opRemove, ID: sn.view.leader}, 5*time.Second)
		return true
	case "restart all":
		var idxs []int
		for id := range sn.clients {
			idxs = append(idxs, sn.slotOf[id])
		}
		sortInts(idxs)
		return len(idxs) > 0 && f.killRestart(ctx, idxs)
	case "crash point":
		return f.crashPoint(ctx, sn)
	case "snapshot catch-up":
		return f.snapshotCatchUp(ctx, sn)
	case "full disk":
		return f.fullDisk(ctx, sn)
	case "rotate certs":
		return f.rotateCerts(ctx, sn)
	case "forged notice":
		return f.forgedNotice(ctx, sn)
	case "forged identity":
		return f.forgedIdentity(ctx, sn)
	}
	panic("unknown fault " + kind)
}

func (f *injector) network(ctx context.Context, rules map[link]rule, lo, hi time.Duration) bool {
	id := f.c.net.apply(rules)
	sleep(ctx, between(f.rnd, lo, hi))
	f.c.net.heal(id)
	return true
}

// killRestart kills the members in idxs with SIGKILL, keeps them down a moment, restarts them
// on their data dirs and checks that each came back as itself with at least what it had applied.
func (f *injector) killRestart(ctx context.Context, idxs []int) bool {
	type before struct {
		idx      int
		id       uint64
		applied  uint64
		baseline bool // applied was read from the member itself before the kill
		p        *process
	}
	var held []before
	for _, idx := range idxs {
		p := f.c.hold(idx)
		if p == nil {
			continue
		}
		id, _ := f.c.memberOf(idx)
		b := before{idx: idx, id: id, p: p}
		if st, err := memberStatus(ctx, f.c.clientAddr(idx), time.Second); err == nil {
			b.applied, b.baseline = st.GetRaftAppliedIndex(), true
			if got := st.GetHeader().GetMemberId(); got != id && id != 0 {
				f.c.fail("slot %d: member reports ID %016x, the test knows it as %016x", idx, got, id)
			}
		}
		held = append(held, b)
	}
	if len(held) == 0 {
		return false
	}
	for _, b := range held {
		b.p.kill()
	}
	sleep(ctx, between(f.rnd, 0, 1500*time.Millisecond))
	for _, b := range held {
		np := f.c.release(b.idx, true)
		if np == nil {
			continue // the restart failed, and said so
		}
		if np == b.p {
			f.c.countCameBack("not restarted: killed before its join wrote a data dir (it joins again)")
			continue
		}
		cb := comeback{idx: b.idx, id: b.id, proc: np, applied: b.applied, baseline: b.baseline}
		if !f.c.checkCameBack(ctx, cb, time.Now()) {
			f.c.deferCameBack(cb)
		}
	}
	return true
}

// comeback is a member restarted on its data dir after kill -9, to check that it came back.
type comeback struct {
	idx      int
	id       uint64
	proc     *process // the restarted process
	applied  uint64   // its applied index before the kill, if baseline
	baseline bool
}

// checkCameBack waits until the restarted member answers Status and checks that it is the same
// member with its data: same ID, applied index not behind what it had before the kill (when
// that was read). A member that stays silent for cfg.cameBackWithin after from fails the test,
// unless a later fault or client made it silent (see excuse). It returns false when ctx ended
// first: the check is then made in the heal phase (checkDeferred).
func (c *cluster) checkCameBack(ctx context.Context, cb comeback, from time.Time) bool {
	deadline := from.Add(c.cfg.cameBackWithin)
	for time.Now().Before(deadline) {
		if cb.proc.exited() {
			c.countCameBack("skipped: " + exitReason(cb.proc))
			return true
		}
		st, err := memberStatus(ctx, c.clientAddr(cb.idx), time.Second)
		if err == nil {
			c.judgeCameBack(cb, st)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		sleep(ctx, 100*time.Millisecond)
	}
	if ctx.Err() != nil {
		return false
	}
	if why := c.excuse(cb); why != "" {
		c.countCameBack("skipped: " + why)
		return true
	}
	c.countCameBack("FAILED: no Status answer")
	c.fail("%s (%016x) was restarted after kill -9 and has not answered Status within %v, while running, not paused and still a member:\n%s",
		cb.proc.name, cb.id, c.cfg.cameBackWithin, cb.proc.logTail(5))
	return true
}

// judgeCameBack checks a restarted member's first Status answer.
func (c *cluster) judgeCameBack(cb comeback, st *pb.StatusResponse) {
	if got := st.GetHeader().GetMemberId(); cb.id != 0 && got != cb.id {
		if cb.proc.exited() {
			// Another process answered on the slot's port after this one ended.
			c.countCameBack("skipped: " + exitReason(cb.proc))
			return
		}
		c.countCameBack("FAILED: another member ID")
		c.fail("%s came back after kill -9 as %016x, not %016x", cb.proc.name, got, cb.id)
		return
	}
	if !cb.baseline {
		c.countCameBack("checked: same ID (no applied index before the kill: Status failed then)")
		return
	}
	if st.GetRaftAppliedIndex() < cb.applied {
		c.countCameBack("FAILED: applied index behind")
		c.fail("%s came back after kill -9 with applied index %d, had %d", cb.proc.name, st.GetRaftAppliedIndex(), cb.applied)
		return
	}
	c.countCameBack("checked: same ID, applied index not behind")
}

// excuse is why a restarted member that has not answered may legitimately be silent: it ended,
// a later fault paused it, or it was removed since (by a client, or by "remove leader" while
// partitioned), which ends it. Status needs no leader, so a cluster without quorum excuses
// nothing. "" when nothing excuses it.
func (c *cluster) excuse(cb comeback) string {
	if cb.proc.exited() {
		return exitReason(cb.proc)
	}
	if cb.proc.pauseCount() > 0 {
		return "paused by another fault since its restart"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.slots[cb.idx]; {
	case s.state == slotBroken:
		return "its slot failed otherwise (reported on its own)"
	case s.state != slotMember || s.id != cb.id:
		return "removed from the membership since its restart"
	}
	return ""
}

// exitReason is why a restarted member ended before it could be checked.
func exitReason(p *process) string {
	switch code, own := p.ownExit(); {
	case !own:
		return "killed again by another fault"
	case code == 3:
		return "removed since (it exited 3)"
	default:
		// The reconciler judges a member that stopped by itself (keepRunning).
		return fmt.Sprintf("exited by itself with status %d", code)
	}
}

// countCameBack counts an outcome of the came-back checks, for the report.
func (c *cluster) countCameBack(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cameBack[outcome]++
}

// deferCameBack keeps a check that the end of the run cut short, for checkDeferred.
func (c *cluster) deferCameBack(cb comeback) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deferred = append(c.deferred, cb)
}

// checkDeferred makes, after the faults, the checks the end of the run cut short, each with a
// whole cfg.cameBackWithin from now: restarts close to the end are checked like any other.
func (c *cluster) checkDeferred() {
	c.mu.Lock()
	cbs := c.deferred
	c.deferred, c.cameBackAfterRun = nil, len(cbs)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, cb := range cbs {
		wg.Add(1)
		go func() { defer wg.Done(); c.checkCameBack(context.Background(), cb, time.Now()) }()
	}
	wg.Wait()
}

func (c *cluster) clientAddr(idx int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("127.0.0.1:%d", c.slots[idx].client)
}

// memberStatus asks one member for its Maintenance.Status on a connection of its own, so that a
// restarted member is reached at once.
func memberStatus(ctx context.Context, addr string, timeout time.Duration) (*pb.StatusResponse, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(transportCreds))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return pb.NewMaintenanceClient(cc).Status(ctx, &pb.StatusRequest{})
}

func pick(rnd *rand.Rand, m map[uint64]string) string {
	var keys []uint64
	for k := range m {
		keys = append(keys, k)
	}
	sortU64(keys)
	return m[keys[rnd.IntN(len(keys))]]
}

func sortInts(s []int)   { slices.Sort(s) }
func sortU64(s []uint64) { slices.Sort(s) }
