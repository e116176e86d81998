package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/clusterctl/clusterctl/pkg/crashpoint"
)

// writePath are the crash points a running member reaches on its own while clients change the
// membership; the crash-point fault arms one of them at random. The snapshot points are reached
// only when a member sends or receives a snapshot: the snapshot catch-up fault arms them, and
// the restore points are clusterctl's (TestRestoreCrashPoints).
var writePath = []string{
	crashpoint.RaftSaveBefore, crashpoint.RaftSaveAfter, crashpoint.ApplyBefore,
	crashpoint.MembershipSaveBefore, crashpoint.MembershipSaveAfter, crashpoint.SnapshotSendBefore,
}

// armedWithin bounds how long an armed member may take to reach its crash point; one that has
// not by then is killed like any other, and the report says so.
const armedWithin = 8 * time.Second

// crashLine is what an armed member writes to stderr as it kills itself (pkg/crashpoint).
func crashLine(point string) string { return "crashpoint: " + point + " hit " }

// heldMember is a member a fault holds, with what it reported before the fault.
type heldMember struct {
	idx      int
	id       uint64
	p        *process
	applied  uint64
	baseline bool
}

// holdMember takes slot idx for a fault and reads the member's applied index, the came-back
// check's baseline. ok is false if the slot has no running member or another fault holds it.
func (f *injector) holdMember(ctx context.Context, idx int) (heldMember, bool) {
	p := f.c.hold(idx)
	if p == nil {
		return heldMember{}, false
	}
	id, _ := f.c.memberOf(idx)
	h := heldMember{idx: idx, id: id, p: p}
	if st, err := memberStatus(ctx, f.c.clientAddr(idx), time.Second); err == nil {
		h.applied, h.baseline = st.GetRaftAppliedIndex(), true
	}
	return h, true
}

// crashPoint kills a random member, restarts it on its data dir with a random write-path crash
// point armed, waits until it dies there (or armedWithin passes, when it is killed), restarts
// it unarmed and checks that it came back.
func (f *injector) crashPoint(ctx context.Context, sn snapshot) bool {
	var idxs []int
	for id := range sn.clients {
		idxs = append(idxs, sn.slotOf[id])
	}
	if len(idxs) == 0 {
		return false
	}
	sortInts(idxs)
	idx := idxs[f.rnd.IntN(len(idxs))]
	point := writePath[f.rnd.IntN(len(writePath))]
	nth := 1 + f.rnd.IntN(4)
	h, ok := f.holdMember(ctx, idx)
	if !ok {
		return false
	}
	h.p.kill()
	armed := f.c.restartHeld(idx, []string{fmt.Sprintf("%s=%s:%d", crashpoint.EnvVar, point, nth)})
	if armed == nil {
		f.c.release(idx, false)
		return false
	}
	// Entries of the fault's own, through another member, so that the armed member has
	// membership to save (the points after the first write are reached only then) even when the
	// clients' changes are refused or slow.
	start := time.Now()
	for _, other := range idxs {
		if other != idx {
			f.driveUntil(ctx, h.id, f.c.clientAddr(other), armed.done, armedWithin)
			break
		}
	}
	f.awaitCrash(ctx, armed, point, max(armedWithin-time.Since(start), time.Second))
	f.comeBack(ctx, h)
	return true
}

// awaitCrash waits until armed dies at point, or within passes or ctx ends (then it is killed),
// and counts which.
func (f *injector) awaitCrash(ctx context.Context, armed *process, point string, within time.Duration) bool {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-armed.done:
	case <-t.C:
	case <-ctx.Done():
	}
	if !armed.exited() {
		armed.kill()
		f.c.countStat(fmt.Sprintf("crash point %s: armed, not reached, killed", point))
		return false
	}
	if armed.markCrashed(crashLine(point)) {
		f.c.countStat(fmt.Sprintf("crash point %s: died there", point))
		return true
	}
	if code, own := armed.ownExit(); own && code == 3 {
		f.c.countStat(fmt.Sprintf("crash point %s: armed, removed meanwhile (exit 3)", point))
		return false
	}
	f.c.fail("%s, armed at crash point %s, ended without reaching it: %s\n%s", armed.name, point, armed.status(), armed.logTail(5))
	return false
}

// comeBack restarts a held member unarmed on its data dir, hands the slot back and checks that
// the member came back as itself with at least what it had applied before the fault.
func (f *injector) comeBack(ctx context.Context, h heldMember) {
	np := f.c.release(h.idx, true)
	if np == nil || np == h.p {
		return
	}
	cb := comeback{idx: h.idx, id: h.id, proc: np, applied: h.applied, baseline: h.baseline}
	if !f.c.checkCameBack(ctx, cb, time.Now()) {
		f.c.deferCameBack(cb)
	}
}

// restartHeld starts a held slot's member again on its data dir, with env on top of the test's
// environment; nil if it has no data dir or could not be started (which is a failure).
func (c *cluster) restartHeld(idx int, env []string) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[idx]
	if !exists(s.dataDir) || (s.proc != nil && !s.proc.exited()) {
		return nil
	}
	if err := c.start(s, "restart", env); err != nil {
		c.failLocked("restarting %s: %v", s.name, err)
		s.state = slotBroken
		return nil
	}
	return s.proc
}

// countStat counts something the faults did, for the report.
func (c *cluster) countStat(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats[what]++
	c.events.add("%s", what)
}

// markCrashed reports whether the process killed itself at a crash point (its log has line and
// SIGKILL ended it), and if so counts it as ended by the test, like a kill -9.
func (p *process) markCrashed(line string) bool {
	<-p.done
	log := p.ownLog()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signal != syscall.SIGKILL || !strings.Contains(log, line) {
		return false
	}
	p.killed = true
	return true
}

// snapshotCatchUp cuts a follower off until the others have applied (and so compacted) well
// past it, so that it can catch up only from a snapshot; then lets it back. A third of the time
// it is first restarted with the crash point "while receiving a snapshot" armed (and restarted
// unarmed once it died there, to catch up for good); a third of the time the leader is
// restarted with "before sending a snapshot" armed, which it reaches if it leads again when the
// follower is let back.
func (f *injector) snapshotCatchUp(ctx context.Context, sn snapshot) bool {
	if sn.view == nil {
		return false
	}
	idx, lead := f.followerOf(sn, true), f.leaderSlot(sn)
	// One member cut off at a time: two would take a three-member cluster's quorum, and then
	// nobody gets ahead of anybody.
	if idx < 0 || lead < 0 || !f.c.catchingUp.CompareAndSwap(false, true) {
		return false
	}
	defer f.c.catchingUp.Store(false)
	h, ok := f.holdMember(ctx, idx)
	if !ok {
		return false
	}
	if !h.baseline {
		f.c.release(idx, false)
		return false
	}
	rules := map[link]rule{}
	for i := 0; i < f.c.cfg.slots; i++ {
		if i != idx {
			rules[linkOf(idx, i)] = rule{block: true}
		}
	}
	cut := f.c.net.apply(rules)
	// Compaction keeps snapshotCount entries behind each snapshot: past twice that, the member's
	// next entry is gone from every log.
	target := h.applied + 2*uint64(f.c.cfg.snapshotCount) + 2
	behind := f.driveApplied(ctx, h.id, f.c.clientAddr(lead), target, 20*time.Second)
	if !behind {
		f.c.net.heal(cut)
		f.c.countStat("snapshot catch-up: the others did not get far enough ahead in 20s")
		f.c.release(idx, false)
		return true
	}
	var receiver, sender *process
	var leader heldMember
	switch f.rnd.IntN(3) {
	case 0:
		h.p.kill()
		receiver = f.c.restartHeld(idx, []string{crashpoint.EnvVar + "=" + crashpoint.SnapshotReceive})
	case 1:
		if leader, ok = f.holdMember(ctx, lead); ok {
			leader.p.kill()
			if sender = f.c.restartHeld(lead, []string{crashpoint.EnvVar + "=" + crashpoint.SnapshotSendBefore}); sender == nil {
				f.c.release(lead, false)
			}
		}
	}
	healedAt := logSize(h.p)
	f.c.net.heal(cut)
	switch {
	case receiver != nil:
		f.awaitCrash(ctx, receiver, crashpoint.SnapshotReceive, 15*time.Second)
		f.comeBack(ctx, h)
		return true
	case sender != nil:
		f.awaitCrash(ctx, sender, crashpoint.SnapshotSendBefore, armedWithin)
		f.comeBack(ctx, leader)
	}
	if f.waitApplied(ctx, f.c.clientAddr(idx), target, 15*time.Second) {
		f.c.countStat("snapshot catch-up: caught up after the cut")
	} else {
		f.c.countStat("snapshot catch-up: not caught up within 15s of the heal")
		f.c.events.add("slot %d: %s not caught up to %d:\n%s", idx, h.p.name, target, h.p.logTail(10))
	}
	if log := h.p.ownLog(); int64(len(log)) > healedAt-h.p.logFrom && strings.Contains(log[healedAt-h.p.logFrom:], "restore snapshot") {
		f.c.countStat("snapshot catch-up: restored a snapshot")
	}
	f.c.release(idx, false)
	return true
}

// driveApplied waits until the member at addr has applied index target, bounded by within,
// and meanwhile makes entries of its own: it moves the member id, which the caller cut off,
// between its slot's two peer URLs (both lead to its process), recorded as client f.client.
func (f *injector) driveApplied(ctx context.Context, id uint64, addr string, target uint64, within time.Duration) bool {
	urls, cur, ok := f.slotURLs(id)
	deadline := time.Now().Add(within)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if st, err := memberStatus(ctx, addr, time.Second); err == nil && st.GetRaftAppliedIndex() >= target {
			return true
		}
		if ok {
			next := urls[1-cur]
			out, _, sent := f.rec.do(ctx, f.client, addr, input{Kind: opUpdate, ID: id, URL: next}, 2*time.Second)
			switch {
			case sent && !out.Unknown && out.Err == "":
				cur = 1 - cur
			case sent && (out.Unknown || out.Err == errNotFound):
				ok = false // where it is now is not known, or it is gone: no more moves
			}
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return false
}

// slotURLs are the two peer URLs of member id's slot and which of them the latest list gives it.
func (f *injector) slotURLs(id uint64) ([2]string, int, bool) {
	v := f.c.latestView()
	if v == nil {
		return [2]string{}, 0, false
	}
	m, ok := v.member(id)
	if !ok {
		return [2]string{}, 0, false
	}
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	s := f.c.slotOf(m.URL)
	if s == nil {
		return [2]string{}, 0, false
	}
	u := s.urls()
	if m.URL == u[0] {
		return u, 0, true
	}
	return u, 1, true
}

// logSize is how long p's log is now.
func logSize(p *process) int64 {
	st, err := os.Stat(p.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// waitApplied waits until the member at addr has applied index target, bounded by within.
func (f *injector) waitApplied(ctx context.Context, addr string, target uint64, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if st, err := memberStatus(ctx, addr, time.Second); err == nil && st.GetRaftAppliedIndex() >= target {
			return true
		}
		sleep(ctx, 300*time.Millisecond)
	}
	return false
}
