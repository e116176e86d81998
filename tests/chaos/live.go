package chaos

import (
	"fmt"
	"strings"
	"time"
)

// The strict reconfiguration check refuses a change that would leave fewer live voters than a
// quorum (docs/design.md, the liveness rule): a member whose process ended stops counting at
// once, one that is paused within an election timeout. checkLiveQuorum holds every accepted
// voter add to it, from what the test knows of its processes: a voter of the configuration the
// add returned is certainly not live if its slot had no process that could still count while the
// add was decided. What the test cannot know for certain (a partitioned link, a kill or a pause
// just before the call) counts as live, so a failure means the server accepted a change it had
// the evidence to refuse.

// window is a span of time; a zero to is still open.
type window struct{ from, to time.Time }

func (w window) contains(t time.Time) bool {
	return !t.Before(w.from) && (w.to.IsZero() || !t.After(w.to))
}

// killNoticed bounds how long a leader takes to learn that a member's process ended: its stream
// ends as the kernel closes the process's sockets, and the proxy closes the other side.
const killNoticed = 250 * time.Millisecond

// mayCount reports whether the leader could have counted process p as live at some moment of
// [a, b]: p ran then, or had ended less than killNoticed before, and was not paused for longer
// than an election timeout (plus killNoticed) at every such moment.
func (p *process) mayCount(a, b time.Time, election time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	lo, hi := a, b
	if p.started.After(lo) {
		lo = p.started
	}
	if !p.exitedAt.IsZero() && p.exitedAt.Add(killNoticed).Before(hi) {
		hi = p.exitedAt.Add(killNoticed)
	}
	if lo.After(hi) {
		return false
	}
	// Silent for sure from an election timeout after the pause: covered, the whole overlap is
	// silent; pauses do not overlap, and between two of them the process ran.
	for _, w := range p.paused {
		silent := window{from: w.from.Add(election + killNoticed), to: w.to}
		if silent.contains(lo) && silent.contains(hi) {
			return false
		}
	}
	return true
}

// checkLiveQuorum returns how many accepted voter adds it checked, and a failure for each whose configuration had fewer
// voters that may count as live than its quorum. Adding a voter to one voter is the documented
// exception (a cluster restarted from one member grows back that way).
func (c *cluster) checkLiveQuorum(rec *recorder) (checked int, failures []string) {
	rec.mu.Lock()
	history := append([]record(nil), rec.history...)
	start := rec.start
	rec.mu.Unlock()
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	for _, r := range history {
		if r.in.Kind != opAdd || r.in.Learner || r.out.Err != "" || r.out.Unknown || r.after == nil {
			continue
		}
		checked++
		a, b := start.Add(r.call), start.Add(r.ret)
		var voters, live int
		var dead []string
		for _, m := range r.after {
			if m.Learner {
				continue
			}
			voters++
			if c.slotMayCount(procs, m, a, b) {
				live++
			} else {
				dead = append(dead, m.Name)
			}
		}
		if voters > 2 && live < voters/2+1 {
			failures = append(failures, fmt.Sprintf("the voter add of %s (%v to %v into the run) was accepted with %d of %d voters live, short of the quorum of %d: not live %s",
				r.in.Name, r.call.Round(time.Millisecond), r.ret.Round(time.Millisecond), live, voters, voters/2+1, strings.Join(dead, ", ")))
		}
	}
	return checked, failures
}

// slotMayCount reports whether a process of m's slot may have counted as live during [a, b].
func (c *cluster) slotMayCount(procs []*process, m mem, a, b time.Time) bool {
	c.mu.Lock()
	s := c.slotOf(strings.Split(m.URL, ",")[0])
	c.mu.Unlock()
	if s == nil {
		return true // not a slot's URL: the test knows nothing of it
	}
	for _, p := range procs {
		if p.slot == s.idx && p.mayCount(a, b, c.cfg.election) {
			return true
		}
	}
	return false
}
