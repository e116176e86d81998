package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// settings are the knobs of one run.
type settings struct {
	bin           string
	dir           string // data dirs and logs
	slots         int    // member slots: at most this many members at once
	maxVoters     int    // the clients add a learner where a voter would make more
	heartbeat     time.Duration
	election      time.Duration
	snapshotCount int
	maxLearners   int
	// settle is how long after an add of unknown outcome the test stops waiting for it to show
	// up and reuses its slot; a late appearance is still handled (the slot adopts it).
	settle time.Duration
	// removalDeadline is how long a removed member may take to stop by itself.
	removalDeadline time.Duration
	// cameBackWithin is how long a member restarted after kill -9 may take to answer Status,
	// which it answers from its own state, leader or not, once it has opened its data dir: well
	// under a second, so the bound is for a loaded machine and a -race build.
	cameBackWithin time.Duration
}

type slotState int

const (
	slotFree    slotState = iota
	slotAdding            // an add for this slot is in flight
	slotPending           // an add for this slot ended with an unknown outcome
	slotMember            // a member with this slot's URL is in the membership
	slotRemoved           // that member was removed; its process must stop by itself
	slotBroken            // something went wrong; the slot is left alone (the failure is recorded)
)

// slot is a place for one member: fixed proxy ports (two peer URLs, so that an update can move
// a member between them without losing it), a client port and a real peer port.
type slot struct {
	idx      int
	proxies  [2]*proxy
	client   int // the member's client port
	peer     int // the member's real peer port, behind the proxies
	state    slotState
	name     string // the member's name; unique for every add
	gen      int
	id       uint64
	knownAt  time.Time // when the test learned id: a list called after it must show id
	since    time.Time // slotPending: when the add returned; slotRemoved: when the removal was seen
	dataDir  string
	initial  string // --initial-cluster of the member's first start (its ETCD_INITIAL_CLUSTER if it joined)
	url      string // the peer URL it was added with
	printed  string // what `member add -w env` printed for the add, if the test saw its answer
	proc     *process
	held     bool // a fault owns the process: the reconciler leaves it alone
	rechecks int  // restarts of a removed member's data dir, to see it refuse again
}

func (s *slot) urls() [2]string { return [2]string{s.proxies[0].url(), s.proxies[1].url()} }

func (s *slot) owns(url string) bool { u := s.urls(); return url == u[0] || url == u[1] }

// view is the membership as one linearizable list returned it.
type view struct {
	members []mem
	started map[uint64]bool
	leader  uint64
	callAt  time.Time
	retAt   time.Time
}

func (v *view) member(id uint64) (mem, bool) {
	for _, m := range v.members {
		if m.ID == id {
			return m, true
		}
	}
	return mem{}, false
}

// cluster owns the slots, the processes and the proxy.
type cluster struct {
	cfg settings
	net *network
	pki *clusterPKI // nil for plain http
	// catchingUp is held by the snapshot catch-up fault while it has a member cut off.
	catchingUp atomic.Bool
	mounts     map[string]bool // tmpfs mounts of the full-disk fault, under mu
	rnd        *rand.Rand      // the reconciler's; only its goroutine uses it

	mu       sync.Mutex
	slots    []*slot
	procs    []*process // every process ever started
	latest   *view
	failures []string
	stats    map[string]int
	events   *journal
	// The came-back checks of restarted members (faults.go): outcomes, the checks the end of
	// the run cut short, and how many of those the heal phase made.
	cameBack         map[string]int
	deferred         []comeback
	cameBackAfterRun int
	logf             func(format string, args ...any)
}

// tally counts what happened to slot s, for the report, and journals it. Called with c.mu held.
func (c *cluster) tally(s *slot, what string) {
	c.stats[what]++
	c.events.add("slot %d: %s: %s (%016x)", s.idx, what, s.name, s.id)
}

func newCluster(cfg settings, pki *clusterPKI, seed uint64, logf func(string, ...any)) (*cluster, error) {
	c := &cluster{cfg: cfg, pki: pki, rnd: rand.New(rand.NewPCG(seed, 0x7265636f6e)), stats: map[string]int{}, cameBack: map[string]int{}, logf: logf, mounts: map[string]bool{}}
	events, err := newJournal(filepath.Join(cfg.dir, "events.log"))
	if err != nil {
		return nil, err
	}
	c.events = events
	c.net = newNetwork(seed, c.livePids)
	if pki != nil {
		c.net.scheme = "https"
	}
	for _, d := range []string{"data", "logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	for i := 0; i < cfg.slots; i++ {
		s := &slot{idx: i}
		if err := c.newPorts(s); err != nil {
			return nil, err
		}
		for j := range s.proxies {
			p, err := listenProxy(c.net, i, func() string {
				c.mu.Lock()
				defer c.mu.Unlock()
				return fmt.Sprintf("127.0.0.1:%d", s.peer)
			})
			if err != nil {
				c.close()
				return nil, err
			}
			s.proxies[j] = p
		}
		c.slots = append(c.slots, s)
	}
	return c, nil
}

func (c *cluster) newPorts(s *slot) error {
	cp, err := freePort()
	if err != nil {
		return err
	}
	pp, err := freePort()
	if err != nil {
		return err
	}
	s.client, s.peer = cp, pp
	return nil
}

// livePids maps the running member processes to their slots, for the proxy.
func (c *cluster) livePids() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	for _, s := range c.slots {
		if s.proc != nil && !s.proc.exited() {
			out[s.proc.pid] = s.idx
		}
	}
	return out
}

func (c *cluster) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(format, args...)
}

// failLocked records a failure; called with c.mu held.
func (c *cluster) failLocked(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.failures = append(c.failures, msg)
	c.logf("FAILURE: %s", msg)
}

func (c *cluster) slotOf(url string) *slot {
	for _, s := range c.slots {
		if s.owns(url) {
			return s
		}
	}
	return nil
}

// start runs clusterd for slot s; mode is new, join or restart. A join gets env, the phase-two
// environment as `member add -w env` printed it (see joinEnv), and none of the four flags it
// sets: a flag would win over the variable and the printed lines would prove nothing. Called
// with c.mu held.
func (c *cluster) start(s *slot, mode string, env []string) error {
	scheme := c.net.scheme
	args := []string{
		"--data-dir", s.dataDir,
		"--listen-client-urls", fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.client),
		"--advertise-client-urls", fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.client),
		"--listen-peer-urls", fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.peer),
		"--initial-cluster-token", "chaos",
		"--heartbeat-interval", fmt.Sprint(c.cfg.heartbeat.Milliseconds()),
		"--election-timeout", fmt.Sprint(c.cfg.election.Milliseconds()),
		"--snapshot-count", fmt.Sprint(c.cfg.snapshotCount),
		"--max-learners", fmt.Sprint(c.cfg.maxLearners),
	}
	if c.pki != nil {
		args = append(args, c.pki.args(s.idx)...)
	}
	if mode != "join" {
		state := "existing"
		if mode == "new" {
			state = "new"
		}
		args = append(args, "--name", s.name, "--initial-advertise-peer-urls", s.url,
			"--initial-cluster", s.initial, "--initial-cluster-state", state)
	}
	p, err := startProcess(c.events, c.cfg.bin, filepath.Join(c.cfg.dir, "logs", s.name+".log"), s.idx, s.name, mode, args, env)
	if err != nil {
		return err
	}
	s.proc = p
	c.procs = append(c.procs, p)
	c.tally(s, "start "+mode)
	return nil
}

// bootstrap starts the first n members as a new cluster.
func (c *cluster) bootstrap(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var initial []string
	for i := 0; i < n; i++ {
		s := c.slots[i]
		s.name, s.url = fmt.Sprintf("m%d-0", i), s.urls()[0]
		s.dataDir = filepath.Join(c.cfg.dir, "data", s.name)
		initial = append(initial, s.name+"="+s.url)
	}
	for i := 0; i < n; i++ {
		s := c.slots[i]
		s.initial, s.state = strings.Join(initial, ","), slotMember
		if err := c.start(s, "new", nil); err != nil {
			return err
		}
	}
	return nil
}

// snapshot is what the clients and the faults choose from.
type snapshot struct {
	view    *view
	clients map[uint64]string // member ID to client address, for members with a live process
	slotOf  map[uint64]int
}

func (c *cluster) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	sn := snapshot{view: c.latest, clients: map[uint64]string{}, slotOf: map[uint64]int{}}
	for _, s := range c.slots {
		if s.id != 0 {
			sn.slotOf[s.id] = s.idx
		}
		if s.id != 0 && s.proc != nil && !s.proc.exited() {
			sn.clients[s.id] = fmt.Sprintf("127.0.0.1:%d", s.client)
		}
	}
	return sn
}

// liveClients are the client addresses of every running process, for the reconciler's lists,
// which must work before the test knows any ID.
func (c *cluster) liveClients() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.slots {
		if s.proc != nil && !s.proc.exited() && s.state != slotRemoved {
			out = append(out, fmt.Sprintf("127.0.0.1:%d", s.client))
		}
	}
	return out
}

// reserve picks a free slot for an add, or nil.
func (c *cluster) reserve(rnd *rand.Rand) *slot {
	c.mu.Lock()
	defer c.mu.Unlock()
	var free []*slot
	for _, s := range c.slots {
		if s.state == slotFree && s.proc == nil && !c.urlInLatest(s) {
			free = append(free, s)
		}
	}
	if len(free) == 0 {
		return nil
	}
	s := free[rnd.IntN(len(free))]
	s.gen++
	s.state, s.name, s.id, s.printed = slotAdding, fmt.Sprintf("m%d-%d", s.idx, s.gen), 0, ""
	s.url = s.urls()[rnd.IntN(2)]
	s.dataDir = filepath.Join(c.cfg.dir, "data", s.name)
	return s
}

func (c *cluster) urlInLatest(s *slot) bool {
	if c.latest == nil {
		return true
	}
	for _, m := range c.latest.members {
		if s.owns(m.URL) {
			return true
		}
	}
	return false
}

// added is the outcome of an add reserved with reserve; after is the configuration the answer
// carried, if it could be read. From it the test prints the phase-two environment the way
// `clusterctl member add -w env` would have printed it for this answer.
func (c *cluster) added(s *slot, out output, after *view, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case out.Unknown:
		s.state, s.since = slotPending, at
	case out.Err != "":
		s.state, s.name = slotFree, ""
	default:
		s.state, s.id, s.knownAt = slotMember, out.ID, at
		if after == nil {
			return
		}
		r := addResult(after, out.ID, s.name)
		if r == nil {
			c.failLocked("the answer to the add of %s (%016x) does not list it: %v", s.name, out.ID, after.members)
			return
		}
		printed, err := printEnv(r)
		if err != nil {
			c.failLocked("printing the environment of %s: %v", s.name, err)
			return
		}
		s.printed = printed
	}
}

// observe takes a linearizable list and brings the processes in line with it: added members
// start (phase two), members that are down come back, removed members must stop by themselves.
func (c *cluster) observe(v *view) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest == nil || v.leader != c.latest.leader || len(v.members) != len(c.latest.members) {
		c.events.add("list: leader %016x, %d members", v.leader, len(v.members))
	}
	if c.latest == nil || v.callAt.After(c.latest.callAt) {
		c.latest = v
	}
	for _, s := range c.slots {
		c.reconcile(s, v)
	}
}

// reconcile is one slot's part of observe. Called with c.mu held.
func (c *cluster) reconcile(s *slot, v *view) {
	var m mem
	var present bool
	for _, x := range v.members {
		// The slot's own member wins over another that took the slot's other port (an add of a
		// URL that an update had just freed): that one is not this slot's business.
		if s.owns(x.URL) && (!present || x.ID == s.id) {
			m, present = x, true
		}
	}
	switch s.state {
	case slotAdding, slotBroken:
		return
	case slotFree, slotPending:
		if present && s.proc == nil {
			// An add of unknown outcome took effect, or one of an earlier generation of this slot
			// did so late: either way it is this slot's member now.
			c.adopt(s, m, v)
		} else if s.state == slotPending && v.callAt.After(s.since.Add(c.cfg.settle)) {
			s.state, s.name = slotFree, ""
		}
		if s.state != slotMember {
			return
		}
	}
	if s.state == slotMember {
		if s.id == 0 && present && m.Name == s.name {
			s.id, s.knownAt = m.ID, v.retAt
		}
		if !present || m.ID != s.id {
			if s.id != 0 && v.callAt.After(s.knownAt) {
				s.state, s.since = slotRemoved, time.Now()
				c.tally(s, "removal seen")
			}
			if s.state == slotMember {
				return
			}
		} else {
			s.url = m.URL
		}
	}
	if s.held {
		return
	}
	switch s.state {
	case slotMember:
		c.keepRunning(s, v, true)
	case slotRemoved:
		c.expectGone(s)
	}
}

func (c *cluster) adopt(s *slot, m mem, v *view) {
	// No add of this slot was answered with this member: nothing was printed for it.
	s.state, s.id, s.name, s.url, s.knownAt, s.printed = slotMember, m.ID, m.Name, m.URL, v.retAt, ""
	s.dataDir = filepath.Join(c.cfg.dir, "data", s.name)
	c.tally(s, "adopted")
}

// observeStale takes a serializable list, which any member answers without a leader, and only
// starts the processes of known members that are down, and of members it shows at a port of a
// slot without a process (an add of unknown outcome that took effect, or an add meant to be
// refused that took a URL an update had freed). Without it, a cluster that lost its quorum to members that are added but not
// started yet (a voter added to a one-voter cluster, whose answer may have been lost) could never
// get them started: a linearizable list needs the quorum they would restore.
func (c *cluster) observeStale(v *view) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.slots {
		// A member that exited 3 has said itself that it is removed (its tombstone is written):
		// no linearizable list is needed to believe it, and none may come while the removal
		// left a voter that must start first, such as one added on the URL it freed.
		if s.state == slotMember && !s.held && s.proc != nil && s.proc.exited() {
			if code, own := s.proc.ownExit(); own && code == 3 {
				s.state, s.since = slotRemoved, time.Now()
				c.tally(s, "removal seen")
			}
		}
		if s.state == slotRemoved && !s.held {
			c.expectGone(s)
		}
		if (s.state == slotPending || s.state == slotFree) && s.proc == nil && !s.held {
			for _, x := range v.members {
				if s.owns(x.URL) {
					c.adopt(s, x, v)
				}
			}
		}
		if m, ok := v.member(s.id); ok && s.id != 0 && s.state == slotMember && !s.held && m.URL != "" {
			c.keepRunning(s, v, false)
		}
	}
}

// keepRunning makes sure a member in the membership has a process. A stale view (serializable)
// may predate a removal, so it never counts as proof that a member is still in the cluster.
func (c *cluster) keepRunning(s *slot, v *view, linearizable bool) {
	if s.proc != nil && !s.proc.exited() {
		return
	}
	if p := s.proc; p != nil {
		code, own := p.ownExit()
		tail := p.logTail(3)
		switch {
		case !own:
			// The test ended it: a fault that is over, or the end of the run.
		case code == 3:
			if linearizable && p.exitedAt.Before(v.callAt) {
				c.failLocked("%s (%016x) exited 3 (removed) but a list made after that still has it:\n%s", s.name, s.id, tail)
				s.state = slotBroken
				return
			}
			return // the list may predate the removal: wait for the next one
		case code == 1 && p.mode == "join" && benignJoinFailure(tail):
			c.tally(s, "join refused, retried")
			if strings.Contains(tail, "address already in use") {
				_ = c.newPorts(s)
			}
		case code == 1 && strings.Contains(tail, "address already in use"):
			_ = c.newPorts(s)
		default:
			c.failLocked("%s (%016x) stopped by itself with %s while a member:\n%s", s.name, s.id, p.status(), tail)
			s.state = slotBroken
			return
		}
	}
	mode := "restart"
	var env []string
	if !exists(s.dataDir) {
		mode = "join"
		var err error
		if env, err = c.joinEnv(s, v); err != nil {
			c.failLocked("the phase-two environment of %s (%016x): %v", s.name, s.id, err)
			s.state = slotBroken
			return
		}
	}
	if err := c.start(s, mode, env); err != nil {
		c.failLocked("starting %s: %v", s.name, err)
		s.state = slotBroken
	}
}

// joinEnv is the environment of slot s's phase-two start, from the lines `member add -w env`
// prints: the very lines printed for the add when the membership is still the one its answer
// carried, and otherwise (another change since, or an add of unknown outcome that printed
// nothing) the lines it prints for the membership v of now, as an operator who ran member add
// again would get them. That environment is only valid for the membership it was printed for,
// in etcd as in clusterd. Called with c.mu held.
func (c *cluster) joinEnv(s *slot, v *view) ([]string, error) {
	r := addResult(v, s.id, s.name)
	if r == nil {
		return nil, fmt.Errorf("the list it would be printed from does not have it")
	}
	now, err := printEnv(r)
	if err != nil {
		return nil, err
	}
	switch {
	case s.printed == "":
		c.tally(s, "join env: printed from the membership at start (no add answer seen)")
	case s.printed == now:
		c.tally(s, "join env: as printed for the add")
	default:
		c.tally(s, "join env: printed again (membership changed since the add)")
		c.events.add("slot %d: env printed for the add %q, for the membership now %q", s.idx, s.printed, now)
	}
	env, err := parseEnv(now)
	if err != nil {
		return nil, fmt.Errorf("reading back what the printer printed: %v", err)
	}
	if got := envValue(env, "ETCD_NAME"); got != s.name {
		return nil, fmt.Errorf("ETCD_NAME is %q, the add named it %q", got, s.name)
	}
	// A restart on the data dir this join writes keeps passing the same --initial-cluster.
	s.initial = envValue(env, "ETCD_INITIAL_CLUSTER")
	return env, nil
}

// benignJoinFailure is a phase-two start refused because the membership changed between the
// list its environment was printed from and the start (an update that moved a member to its
// other peer URL, say): the test tries again with a newer list. The environment itself is
// printed from one list, so its ETCD_INITIAL_CLUSTER entry for the member always agrees with
// ETCD_INITIAL_ADVERTISE_PEER_URLS: clusterd refusing that pair is a failure, not retried.
func benignJoinFailure(log string) bool {
	for _, s := range []string{"assign ids error", "cannot reach any member", "address already in use"} {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

func exists(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "member.db"))
	return err == nil
}

const removedLine = "clusterd: this member has been permanently removed from the cluster. Exiting."

// expectGone checks that a removed member stops by itself with status 3, then wipes its slot.
func (c *cluster) expectGone(s *slot) {
	p := s.proc
	if p != nil && !p.exited() {
		if time.Since(s.since) > c.cfg.removalDeadline {
			c.failLocked("%s (%016x) was removed %v ago and still runs:\n%s", s.name, s.id, c.cfg.removalDeadline, p.logTail(5))
			p.kill()
			s.state = slotBroken
		}
		return
	}
	if p != nil {
		code, own := p.ownExit()
		tail := p.logTail(3)
		switch {
		case !own:
			// Killed by a fault around the time of its removal: it must refuse to come back.
			if exists(s.dataDir) {
				c.restartRemoved(s)
				return
			}
		case code == 3:
			if !strings.Contains(tail, removedLine) {
				c.failLocked("%s exited 3 without the line %q:\n%s", s.name, removedLine, tail)
			}
			c.tally(s, "removed member exited 3")
			if s.rechecks == 0 && c.rnd.IntN(3) == 0 {
				// Once in a while, start it again on its data dir: it must refuse at once.
				s.rechecks++
				c.restartRemoved(s)
				return
			}
		case code == 1 && p.mode == "join" && !exists(s.dataDir):
			// Removed before its phase two got through: it never became a running member.
		case code == 1 && exists(s.dataDir) && strings.Contains(p.ownLog(), "address already in use"):
			// Another program took a port of the slot before this start bound it: the member
			// never ran, so it has yet to refuse, on new ports.
			if err := c.newPorts(s); err != nil {
				c.failLocked("new ports for %s: %v", s.name, err)
			}
			c.restartRemoved(s)
			return
		default:
			c.failLocked("%s (%016x) was removed and stopped with %s, not 3:\n%s", s.name, s.id, p.status(), tail)
		}
	} else if exists(s.dataDir) {
		c.restartRemoved(s)
		return
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		c.failLocked("wiping %s: %v", s.dataDir, err)
	}
	c.tally(s, "slot wiped")
	s.state, s.proc, s.id, s.name, s.rechecks = slotFree, nil, 0, "", 0
}

func (c *cluster) restartRemoved(s *slot) {
	s.since = time.Now()
	if err := c.start(s, "restart", nil); err != nil {
		c.failLocked("restarting removed %s: %v", s.name, err)
		s.state = slotBroken
	}
}

// hold gives a fault the slot's running process; nil if the slot has none or is taken.
func (c *cluster) hold(idx int) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[idx]
	if s.held || s.state != slotMember || s.proc == nil || s.proc.exited() {
		return nil
	}
	s.held = true
	return s.proc
}

// release hands the slot back; restart says whether to start its process again first.
func (c *cluster) release(idx int, restart bool) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[idx]
	s.held = false
	if restart && (s.proc == nil || s.proc.exited()) && exists(s.dataDir) {
		if err := c.start(s, "restart", nil); err != nil {
			c.failLocked("restarting %s: %v", s.name, err)
			s.state = slotBroken
			return nil
		}
	}
	return s.proc
}

// memberOf is the ID and name of the member in slot idx.
func (c *cluster) memberOf(idx int) (uint64, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[idx].id, c.slots[idx].name
}

// running are the slots' processes that have not exited.
func (c *cluster) running() []*process {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*process
	for _, s := range c.slots {
		if s.proc != nil && !s.proc.exited() {
			out = append(out, s.proc)
		}
	}
	return out
}

// stopAll ends every process: SIGTERM, which must end a running member with status 0.
func (c *cluster) stopAll(check bool) {
	running := c.running()
	var wg sync.WaitGroup
	for _, p := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.resume()
			if !p.terminate(10*time.Second) && check {
				c.fail("%s did not stop within 10s of SIGTERM", p.name)
				return
			}
			p.mu.Lock()
			code, sig := p.exitCode, p.signal
			p.mu.Unlock()
			if check && (code != 0 || sig != 0) {
				c.fail("%s stopped by SIGTERM with %s, not 0:\n%s", p.name, p.status(), p.logTail(3))
			}
		}()
	}
	wg.Wait()
}

func (c *cluster) close() {
	c.stopAll(false)
	c.unmountAll()
	c.mu.Lock()
	slots := c.slots
	c.mu.Unlock()
	for _, s := range slots {
		for _, p := range s.proxies {
			if p != nil {
				p.close()
			}
		}
	}
	c.events.close()
}

// dumpStacks ends every running member with SIGQUIT and returns, for each, its goroutines
// that run this module's code: what a member that stopped making progress was doing.
func (c *cluster) dumpStacks() string {
	var b strings.Builder
	for _, p := range c.running() {
		p.quit(5 * time.Second)
		fmt.Fprintf(&b, "%s (pid %d):\n%s\n\n", p.name, p.pid, p.ownGoroutines())
	}
	return b.String()
}

// describeSlots is every slot's state and process, for a failure message.
func (c *cluster) describeSlots() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := [...]string{"free", "adding", "pending", "member", "removed", "broken"}
	var b strings.Builder
	for _, s := range c.slots {
		proc := "no process"
		if p := s.proc; p != nil {
			proc = fmt.Sprintf("pid %d running", p.pid)
			if p.exited() {
				proc = fmt.Sprintf("pid %d ended: %s", p.pid, p.status())
			}
		}
		fmt.Fprintf(&b, "slot %d: %s %s (%016x), held %v, %s\n", s.idx, names[s.state], s.name, s.id, s.held, proc)
	}
	if v := c.latest; v != nil {
		fmt.Fprintf(&b, "latest linearizable list, made %s: leader %016x", v.callAt.UTC().Format("15:04:05.000"), v.leader)
		for _, m := range v.members {
			fmt.Fprintf(&b, "\n  %s", m)
		}
	}
	return b.String()
}

// latestView is the last linearizable list the clients recorded, or nil.
func (c *cluster) latestView() *view {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}
