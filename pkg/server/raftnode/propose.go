package raftnode

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// LeaderTerm waits until this member is the leader and its applied membership holds every
// conf change in its log, and returns its term. Called under ConfLock, the membership then
// stays as it is until the caller's own change: a check made against it cannot race with a
// change an earlier leader left in the log, nor with one of this leader's that is in its log
// but whose proposer gave up waiting (a proposer waits for seconds; its change reaches the log
// within one pass of the loop). Without a leader elsewhere it returns ErrNotLeader.
func (n *Node) LeaderTerm(ctx context.Context) (uint64, error) {
	if n.lead.Load() != n.id {
		return 0, ErrNotLeader
	}
	term := n.term.Load()
	settled := func() bool {
		// An applied entry of its own term means every entry of earlier terms is applied; raft
		// would, until then, also turn a conf change into an empty entry. Conf changes of its
		// own term it appended itself, and its log keeps them while it leads.
		if n.appliedTerm.Load() < term {
			return false
		}
		last := n.lastConf.Load()
		return last == nil || last.term != term || n.applied.Load() >= last.index
	}
	if !n.WaitFor(ctx, func() bool { return settled() || n.lead.Load() != n.id }) {
		return 0, n.ctxErr(ctx)
	}
	if n.lead.Load() != n.id || n.term.Load() != term {
		return 0, ErrNotLeader
	}
	return term, nil
}

// Propose makes ch through raft and returns the membership once it is applied. term is what
// LeaderTerm returned before ch was checked: if leadership moved since, ch is not proposed
// (ErrNotLeader), and if it moves before ch is appended, ch is not applied (ErrProposalLost).
// Membership changes other than a publish must be made under ConfLock.
func (n *Node) Propose(ctx context.Context, term uint64, ch membership.Change) (*membership.Cluster, error) {
	if n.lead.Load() != n.id || n.term.Load() != term {
		return nil, ErrNotLeader
	}
	done := n.cfg.Metrics.ProposalStarted()
	c, err := n.proposeAndWait(ctx, term, ch)
	// An answer from apply carries the membership, a refusal's too. A proposal that got no
	// answer (not proposed, timed out, stopped) comes back without one, and a lost one, which
	// apply found stale, with ErrProposalLost.
	if c != nil && !errors.Is(err, ErrProposalLost) {
		done(nil)
	} else {
		done(err)
	}
	return c, err
}

// proposeAndWait proposes ch in term and waits for its entry to be applied.
func (n *Node) proposeAndWait(ctx context.Context, term uint64, ch membership.Change) (*membership.Cluster, error) {
	if n.Stopped() {
		return nil, ErrStopped // nothing proposed
	}
	req := randomID()
	data, err := proposal{RequestID: req, Term: term, Change: ch, Time: proposalTime()}.encode()
	if err != nil {
		return nil, err
	}
	w := &waiter{term: term, ch: make(chan result, 1)}
	n.mu.Lock()
	n.waiters[req] = w
	n.mu.Unlock()
	if ch.Kind == membership.KindPublish {
		err = n.raft.Propose(ctx, data)
	} else {
		err = n.raft.ProposeConfChange(ctx, &raftpb.ConfChange{
			Type: confChangeType(ch).Enum(), NodeId: proto.Uint64(uint64(ch.Member.ID)), Context: data,
		})
	}
	if err != nil {
		n.forget(req)
		if errors.Is(err, raft.ErrProposalDropped) {
			return nil, ErrProposalLost
		}
		return nil, n.ctxErr(ctx)
	}
	select {
	case r := <-w.ch:
		return r.cluster, r.err
	case <-ctx.Done():
	case <-n.stopping:
	}
	// select picks at random among ready cases: an answer already given wins over the end of
	// the wait. A leader that applies its own removal answers its proposer and then stops, in
	// the same pass of the Ready loop, and the removal did happen.
	select {
	case r := <-w.ch:
		return r.cluster, r.err
	default:
	}
	// The proposal was made, and the wait ended first (the context, or the member stopped or
	// learnt it was removed): its outcome is unknown, and this member may never know it.
	n.forget(req)
	return nil, ErrTimeout
}

// proposalTime is the time a proposal carries for the history: this leader's clock, in UTC, to
// the millisecond (what people read; the raft index orders the changes).
func proposalTime() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func (n *Node) forget(req uint64) {
	n.mu.Lock()
	delete(n.waiters, req)
	n.mu.Unlock()
}

func (n *Node) ctxErr(ctx context.Context) error {
	if n.Stopped() {
		return ErrStopped
	}
	if n.lead.Load() == raft.None {
		return ErrNoLeader
	}
	return ErrTimeout
}

// ConfLock serialises membership changes on this member: raft cannot have two in flight.
func (n *Node) ConfLock() func() {
	n.confMu.Lock()
	return n.confMu.Unlock
}

// ReadIndex returns the membership as of a linearizable read: everything committed before the
// call is in it. It asks again at once when the leader or the term changes (raft drops a pending
// read then, silently), and returns ErrStopped at once when the member is stopping.
func (n *Node) ReadIndex(ctx context.Context) (*membership.Cluster, error) {
	retry := n.electionTimeout() / 2
	for {
		if n.Stopped() {
			return nil, ErrStopped
		}
		moved := n.current(&n.leaderCh)
		lead, err := n.WaitLeader(ctx)
		if err != nil {
			return nil, err
		}
		// Raft drops, silently, an answer from a member its configuration does not hold: a
		// joining member's read made before its first snapshot is applied would wait out the
		// retry. Raft's configuration changes before the applied membership is published, so
		// it holds the leader once that membership does.
		if !n.WaitFor(ctx, func() bool { return n.Cluster().Member(lead) != nil || n.lead.Load() != uint64(lead) }) {
			return nil, n.ctxErr(ctx)
		}
		if n.lead.Load() != uint64(lead) {
			continue
		}
		idx, err := n.readIndexOnce(ctx, moved, retry)
		if err != nil {
			return nil, err
		}
		if idx == 0 {
			continue // dropped: ask again
		}
		if !n.WaitFor(ctx, func() bool { return n.applied.Load() >= idx }) {
			return nil, n.ctxErr(ctx)
		}
		return n.cluster.Load(), nil
	}
}

// readIndexOnce asks raft for a read index once and waits for it: zero when raft may have
// dropped the request (the leader moved, or no answer within retry).
func (n *Node) readIndexOnce(ctx context.Context, moved <-chan struct{}, retry time.Duration) (uint64, error) {
	rctx := binary.BigEndian.AppendUint64(nil, randomID())
	ch := make(chan uint64, 1)
	n.mu.Lock()
	n.reads[string(rctx)] = ch
	n.mu.Unlock()
	defer n.forgetRead(rctx)
	if err := n.raft.ReadIndex(ctx, rctx); err != nil {
		return 0, n.ctxErr(ctx)
	}
	timer := time.NewTimer(retry)
	defer timer.Stop()
	select {
	case idx := <-ch:
		return max(idx, 1), nil
	case <-moved:
		// The leader or the term changed since the request was made: raft dropped it.
		return 0, nil
	case <-timer.C:
		return 0, nil
	case <-ctx.Done():
		return 0, n.ctxErr(ctx)
	case <-n.stopping:
		return 0, ErrStopped
	}
}

func (n *Node) forgetRead(rctx []byte) {
	n.mu.Lock()
	delete(n.reads, string(rctx))
	n.mu.Unlock()
}

// TransferLeadership hands leadership to another voter and waits until it has it.
//
// A target that has not applied its own promotion yet (just promoted, say) ignores raft's
// invitation to campaign, and raft drops the transfer after an election timeout: so the transfer
// is asked again each election timeout, while this member still leads, until ctx ends. A member
// that does not lead answers ErrNotLeader without asking raft: raft on a follower passes the
// request on to the leader, which would hand its leadership over for nothing.
func (n *Node) TransferLeadership(ctx context.Context, to membership.ID) error {
	round := n.electionTimeout()
	for {
		if n.lead.Load() != n.id {
			return ErrNotLeader
		}
		n.raft.TransferLeadership(ctx, n.id, uint64(to))
		rctx, cancel := context.WithTimeout(ctx, round)
		done := n.WaitFor(rctx, func() bool { return n.lead.Load() == uint64(to) })
		cancel()
		switch {
		case done:
			return nil
		case ctx.Err() != nil || n.Stopped():
			return n.ctxErr(ctx)
		}
		// Asked again, unless someone else leads now (or nobody yet): this member can no
		// longer hand it over.
	}
}

// WaitLeader returns the leader, waiting for an election if there is none: at most an
// election timeout, and at most three quarters of what is left of ctx, so that a member
// without a leader answers ErrNoLeader (nothing was proposed) before its caller gives up.
func (n *Node) WaitLeader(ctx context.Context) (membership.ID, error) {
	limit := n.electionTimeout()
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)*3/4)
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if !n.WaitFor(wctx, func() bool { return n.lead.Load() != raft.None }) {
		if ctx.Err() == nil && n.lead.Load() == raft.None && !n.Stopped() {
			return 0, ErrNoLeader
		}
		return 0, n.ctxErr(ctx)
	}
	return n.Leader(), nil
}

// finish answers the proposers of the applied entries, and fails those whose proposals can no
// longer be applied: once an entry of a later term is applied, every entry of an earlier term
// that will ever commit has committed.
func (n *Node) finish(results []appliedEntry, c *membership.Cluster) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range results {
		if w, ok := n.waiters[r.req]; ok && r.req != 0 {
			w.ch <- result{cluster: c, err: r.err}
			delete(n.waiters, r.req)
		}
		for id, w := range n.waiters {
			dropped := r.req == 0 && errors.Is(r.err, ErrProposalLost) && w.term == r.entry.GetTerm()
			if dropped || w.term < r.entry.GetTerm() {
				w.ch <- result{err: ErrProposalLost}
				delete(n.waiters, id)
			}
		}
	}
}

func (n *Node) failAll(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, w := range n.waiters {
		w.ch <- result{err: err}
		delete(n.waiters, id)
	}
}
