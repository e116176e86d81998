package reconfig

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// Request is one membership change as a client asked for it; between members it travels as a
// clusterdpb.ChangeRequest (peer.go).
type Request struct {
	Change membership.Change
	DryRun bool
}

// Reply is the outcome of a Request. A dry run that would be refused has one too, beside the
// error: the report the verdict was reached on.
type Reply = wire.Report

// Config configures a Coordinator.
type Config struct {
	Node            *raftnode.Node
	Transport       *transport.Transport
	ElectionTimeout time.Duration
	StrictReconfig  bool
	MaxLearners     int
	// Metrics counts the changes this member decides while leader; nil for none.
	Metrics *metrics.Metrics
	// Logger says why a leader refused a change it could not judge in time; nil for none.
	Logger *slog.Logger
}

// Coordinator routes and decides membership changes, and serves the Members service of the
// peer port (peer.go).
type Coordinator struct {
	pb.UnimplementedMembersServer
	cfg Config
}

// New returns a Coordinator.
func New(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{cfg: cfg}
}

// retryable reports refusals after which the same request may go to the leader again: it was
// not applied.
func retryable(err error) bool {
	return errors.Is(err, raftnode.ErrNotLeader) || errors.Is(err, raftnode.ErrProposalLost)
}

// Do carries out req on the leader, wherever it is, and returns once the change is applied
// there (or, for a dry run, once it is checked). A dry run's refusal is the error the real change
// would get, returned with the Reply it was judged on.
func (c *Coordinator) Do(ctx context.Context, req Request) (*Reply, error) {
	backoff := 10 * time.Millisecond
	for {
		if c.cfg.Node.Stopped() {
			// Removed or shutting down: whatever was sent before has its answer already.
			return nil, raftnode.ErrStopped
		}
		lead, err := c.cfg.Node.WaitLeader(ctx)
		if err != nil {
			return nil, err
		}
		seen := c.cfg.Node.Cluster()
		var reply *Reply
		switch {
		case lead == c.cfg.Node.ID():
			reply, err = c.decide(ctx, req)
			c.count(req, err)
		case seen.Member(lead) == nil:
			// A member that has just joined hears its leader before it applies the snapshot
			// that lists the leader, and so its address: not a silent leader (awaitLeader),
			// one to reach once the membership says where (the wait below).
			err = raftnode.ErrNotLeader
		case !c.cfg.Node.HeardWithin(lead, c.cfg.ElectionTimeout):
			err = c.awaitLeader(ctx, lead)
		default:
			reply, err = c.forward(ctx, lead, req)
		}
		if !retryable(err) {
			return reply, err
		}
		// Go round again after the backoff, or as soon as the applied membership changes (on a
		// member that has just joined, the snapshot that holds the leader's address). Not at a
		// change of leader: a leader elected a moment ago is still committing its first entry
		// and hearing from its voters (recheckNewLeader).
		wctx, cancel := context.WithTimeout(ctx, backoff)
		c.cfg.Node.WaitFor(wctx, func() bool { return c.cfg.Node.Cluster() != seen })
		cancel()
		if ctx.Err() != nil {
			return nil, raftnode.ErrTimeout
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// awaitLeader waits, when the leader this member knows has been silent for an election timeout
// or its connection broke, until it is heard again or another leader is known (ErrNotLeader: go
// round again), and answers "no leader" after three election timeouts: a request forwarded to a
// leader that answers nothing would wait for the client's deadline, and whether it was applied
// would be unknown. Nothing is sent, so a client may safely ask again.
func (c *Coordinator) awaitLeader(ctx context.Context, lead membership.ID) error {
	n := c.cfg.Node
	// Raft's randomized election timeout is up to two election timeouts, and a campaign takes a
	// round trip more: three is enough for the others to elect a leader if a quorum is up.
	deadline := time.NewTimer(3 * c.cfg.ElectionTimeout)
	defer deadline.Stop()
	// Polled: a heartbeat heard changes nothing a member waits on.
	poll := time.NewTicker(c.cfg.ElectionTimeout / 50)
	defer poll.Stop()
	for n.Leader() == lead && !n.HeardWithin(lead, c.cfg.ElectionTimeout) {
		select {
		case <-poll.C:
		case <-deadline.C:
			return raftnode.ErrNoLeader
		case <-ctx.Done():
			return raftnode.ErrTimeout
		}
	}
	return raftnode.ErrNotLeader
}

// count records a change this member decided as leader, once its answer is known. A dry run
// changes nothing, and a change that goes round again (leadership moved, or the proposal was
// lost) is counted where it is finally decided, so each change counts once in the cluster.
func (c *Coordinator) count(req Request, err error) {
	if req.DryRun || retryable(err) {
		return
	}
	c.cfg.Metrics.ChangeDecided(req.Change.Kind, err)
}

func (c *Coordinator) decide(ctx context.Context, req Request) (*Reply, error) {
	n := c.cfg.Node
	ch := req.Change
	if ch.Kind != membership.KindPublish {
		defer n.ConfLock()()
	}
	// A client that gave up while others held the lock gets no check run for it. The checks
	// themselves are linear in the URLs, and the URLs bounded (membership.MaxURLs).
	if ctx.Err() != nil {
		return nil, raftnode.ErrTimeout
	}
	// The judgement is bounded (judgeWithin): a leader that cannot decide within it refuses, so
	// the client gets a definite answer, never its own deadline.
	jctx, cancel := context.WithTimeout(ctx, c.judgeWithin())
	defer cancel()
	// Check against a membership that holds every change of earlier leaders, and propose in
	// the same term: otherwise a change an earlier leader left in the log could be applied
	// between the check and the proposal (two learner adds, each alone within --max-learners).
	term, err := n.LeaderTerm(jctx)
	if err != nil {
		return nil, c.undecided(ctx, jctx, err, "no entry of its own term is committed yet: it has not heard from a quorum")
	}
	cl := n.Cluster()
	if ch.Kind == membership.KindAdd {
		ch.Member.ID = newID(cl)
	}
	reply := &Reply{Cluster: cl, Member: ch.Member}
	if m := cl.Member(ch.Member.ID); m != nil {
		reply.Member = *m
	}
	err = c.check(cl, ch, reply)
	if errors.Is(err, membership.ErrUnhealthy) {
		err = c.recheckNewLeader(jctx, cl, ch, reply)
	}
	if err == nil {
		err = c.confirmLive(ctx, jctx, cl, ch)
	}
	if err != nil {
		if statesMembership(err) {
			err = c.confirmRefusal(jctx, cl, ch, reply, err)
			if retryable(err) {
				return nil, err
			}
			err = c.undecided(ctx, jctx, err, "no quorum confirmed its leadership")
		}
		if req.DryRun && !retryable(err) {
			return reply, err
		}
		return nil, err
	}
	if req.DryRun {
		return reply, nil
	}
	if ch.Kind == membership.KindRemove && ch.Member.ID == n.ID() {
		// Hand leadership to an up-to-date voter first, so that the cluster is not left
		// without a leader for a whole election timeout; the new leader then removes us.
		return nil, c.handOff(ctx, cl)
	}
	after, err := n.Propose(ctx, term, ch)
	if err != nil {
		return nil, err
	}
	reply.Cluster = after
	if m := after.Member(ch.Member.ID); m != nil {
		reply.Member = *m
	}
	return reply, nil
}

// judgeWithin bounds how long a leader takes to judge a change, from the moment it holds the
// conf lock to its verdict: an election timeout, and a second at most, well inside the call
// timeouts of etcdctl (5 s) and kubeadm (2 s). A leader that is up hears every live voter within
// a heartbeat interval; one that has not heard from a quorum in that time cannot tell whether the
// change would keep a quorum, and refuses it, as etcd does.
func (c *Coordinator) judgeWithin() time.Duration {
	return min(c.cfg.ElectionTimeout, time.Second)
}

// undecided turns a wait of the judgement that ran out (jctx ended, the client's ctx did not)
// into etcd's refusal "unhealthy cluster", logged with why; any other error is returned as it is.
func (c *Coordinator) undecided(ctx, jctx context.Context, err error, why string) error {
	if jctx.Err() == nil || ctx.Err() != nil || !errors.Is(err, raftnode.ErrTimeout) {
		return err
	}
	c.cfg.Logger.Warn("refused a membership change it could not judge in time",
		"within", c.judgeWithin().String(), "reason", why, "err", membership.ErrUnhealthy.Error())
	return membership.ErrUnhealthy
}

// statesMembership reports refusals that state a fact about the membership (a member exists or
// not, a URL is taken, a member is a voter). Invalid URLs depend on the request alone, and the
// quorum refusals change nothing and are answered as the leader sees its peers now.
func statesMembership(err error) bool {
	return !retryable(err) && !errors.Is(err, membership.ErrInvalidPeerURLs) &&
		!errors.Is(err, membership.ErrUnhealthy) && !errors.Is(err, membership.ErrNotEnoughStarted)
}

// confirmRefusal makes a refusal linearizable. A change that is accepted goes through raft, but
// a refusal is only a read of the membership, and a leader cut off from its cluster keeps
// believing it leads until its election timeout: it could refuse on a membership the cluster
// has moved past (a URL that a removal under a newer leader freed). So the refusal stands only
// if the membership of a linearizable read, which a deposed leader cannot make, gives it too;
// if that membership would let the change through, the request goes round again.
func (c *Coordinator) confirmRefusal(ctx context.Context, cl *membership.Cluster, ch membership.Change, reply *Reply, refusal error) error {
	fresh, err := c.cfg.Node.ReadIndex(ctx)
	if errors.Is(err, raftnode.ErrStopped) {
		// Nothing was proposed; whoever forwarded the request may try the next leader.
		return raftnode.ErrNotLeader
	}
	if err != nil {
		return err
	}
	if fresh == cl {
		return refusal
	}
	reply.Cluster = fresh
	if err := c.check(fresh, ch, reply); err != nil {
		return err
	}
	return raftnode.ErrProposalLost
}

// check runs every proposal-time check and fills in the quorum reports, which a dry run shows
// whatever the verdict.
func (c *Coordinator) check(cl *membership.Cluster, ch membership.Change, reply *Reply) error {
	if ch.Kind == membership.KindPublish {
		return cl.Validate(ch)
	}
	match := c.cfg.Node.Matches()
	peers := c.peers(cl, match, func(id membership.ID) bool { return c.cfg.Node.HeardWithin(id, c.cfg.ElectionTimeout) })
	reply.Before, reply.After, _ = cl.CheckQuorum(ch, peers)
	if err := cl.Validate(ch); err != nil {
		return err
	}
	if ch.Kind == membership.KindAdd && ch.Member.IsLearner && len(cl.Learners()) >= c.cfg.MaxLearners {
		return membership.ErrTooManyLearners
	}
	if ch.Kind == membership.KindPromote && !c.learnerReady(match, ch.Member.ID) {
		return membership.ErrLearnerNotReady
	}
	if !c.cfg.StrictReconfig {
		return nil
	}
	_, _, err := cl.CheckQuorum(ch, peers)
	return err
}

// peers is the leader's view of cl's members for the strict check: started as raft's progress
// and the membership say, connected as heard says.
func (c *Coordinator) peers(cl *membership.Cluster, match map[membership.ID]uint64, heard func(membership.ID) bool) membership.Peers {
	peers := membership.Peers{Leader: c.cfg.Node.ID(), Started: map[membership.ID]bool{}, Connected: map[membership.ID]bool{}}
	for id, m := range cl.Members {
		self := id == c.cfg.Node.ID()
		peers.Started[id] = self || m.Started || match[id] > 0
		peers.Connected[id] = self || heard(id)
	}
	return peers
}

// confirmLive backs a change of the voters the checks accepted with evidence newer than the
// request. The checks count a voter heard within an election timeout whose connection has not
// broken; a voter that stopped a moment ago still counts until the end of its connection reaches
// this member, which a loaded machine delays. So the leader has raft confirm its leadership (a
// heartbeat to every member) and accepts only once the voters heard since then keep the
// strict check's quorum after the change: a stopped voter is never heard again, and the change
// is refused (unhealthy cluster) within judgeWithin. A live cluster answers within a round trip.
func (c *Coordinator) confirmLive(ctx, jctx context.Context, cl *membership.Cluster, ch membership.Change) error {
	if !c.cfg.StrictReconfig || !changesVoters(cl, ch) {
		return nil
	}
	n := c.cfg.Node
	since := time.Now()
	if _, err := n.ReadIndex(jctx); err != nil {
		if errors.Is(err, raftnode.ErrStopped) {
			return raftnode.ErrNotLeader
		}
		return c.undecided(ctx, jctx, err, "no quorum confirmed its leadership")
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		peers := c.peers(cl, n.Matches(), func(id membership.ID) bool { return n.HeardSince(id, since) })
		_, after, err := cl.CheckQuorum(ch, peers)
		if !errors.Is(err, membership.ErrUnhealthy) {
			return err
		}
		select {
		case <-jctx.Done():
			c.cfg.Logger.Warn("refused a membership change: the voters heard since it was asked are short of a quorum after it",
				"connected-voters", after.ConnectedVoters, "quorum", after.Quorum, "within", c.judgeWithin().String(), "err", err.Error())
			return err
		case <-tick.C:
		}
	}
}

// changesVoters reports whether ch changes the voters or a voter's address: a learner's add,
// removal or update, or a publish, leaves the quorum as it is, and needs no fresh evidence.
func changesVoters(cl *membership.Cluster, ch membership.Change) bool {
	switch ch.Kind {
	case membership.KindPublish:
		return false
	case membership.KindAdd:
		return !ch.Member.IsLearner
	case membership.KindRemove, membership.KindUpdate:
		m := cl.Member(ch.Member.ID)
		return m == nil || !m.IsLearner
	}
	return true
}

// recheckNewLeader judges again a change refused as "unhealthy cluster" by a leader that has led
// for less than an election timeout, each time a peer acknowledges entries, until the change
// passes or it has led that long. Such a leader has heard only from the voters that elected it
// and acknowledged its first entry; the others that are up answer that entry within a round
// trip. Without this, the first change after a change of leader (the removal of a second member
// right after the leader's own) is refused although every voter it needs is up.
func (c *Coordinator) recheckNewLeader(ctx context.Context, cl *membership.Cluster, ch membership.Change, reply *Reply) error {
	led := c.cfg.Node.LeadingFor()
	if led == 0 || led >= c.cfg.ElectionTimeout {
		return membership.ErrUnhealthy
	}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.ElectionTimeout-led)
	defer cancel()
	c.cfg.Node.WaitMatches(wctx, func(map[membership.ID]uint64) bool {
		return !errors.Is(c.check(cl, ch, reply), membership.ErrUnhealthy)
	})
	if c.cfg.Node.LeadingFor() == 0 {
		// Leadership moved meanwhile: the next leader judges the change.
		return raftnode.ErrNotLeader
	}
	return c.check(cl, ch, reply)
}

// learnerReady is etcd's rule for a promotion: the learner has 90% of the leader's log.
func (c *Coordinator) learnerReady(match map[membership.ID]uint64, id membership.ID) bool {
	leader, learner := match[c.cfg.Node.ID()], match[id]
	return learner > 0 && float64(learner) >= 0.9*float64(leader)
}

// handOff asks the most up-to-date voter that is up to take over, and answers ErrNotLeader
// once it has, or once this member no longer leads, so that the request goes to the new leader.
func (c *Coordinator) handOff(ctx context.Context, cl *membership.Cluster) error {
	match := c.cfg.Node.Matches()
	if len(match) == 0 {
		// Leadership moved since the checks (only a leader tracks matches): not "unhealthy
		// cluster" for want of a voter to pick, which a client would not retry.
		return raftnode.ErrNotLeader
	}
	var best membership.ID
	var bestMatch uint64
	for _, id := range cl.Voters() {
		// Only a voter that is up can take over; among those, the most up to date.
		if id == c.cfg.Node.ID() || !c.cfg.Node.HeardWithin(id, c.cfg.ElectionTimeout) {
			continue
		}
		if match[id] >= bestMatch {
			best, bestMatch = id, match[id]
		}
	}
	if best == 0 {
		// No other voter is up to take over.
		return membership.ErrUnhealthy
	}
	tctx, cancel := context.WithTimeout(ctx, c.cfg.ElectionTimeout)
	defer cancel()
	if err := c.cfg.Node.TransferLeadership(tctx, best); err != nil && ctx.Err() != nil {
		return err
	}
	return raftnode.ErrNotLeader
}

func newID(cl *membership.Cluster) membership.ID {
	for {
		id := raftnode.NewMemberID()
		if cl.Member(id) == nil && !cl.IsRemoved(id) {
			return id
		}
	}
}
