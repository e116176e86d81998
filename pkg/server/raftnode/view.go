package raftnode

import (
	"context"
	"errors"
	"time"

	"github.com/clusterctl/clusterctl/pkg/server/metrics"
)

// MetricsState is this member's view for the metrics, read at each scrape: quick and safe from
// any goroutine. The match indexes are raft's own view, which only a leader has, so they are
// asked for only while this member leads.
func (n *Node) MetricsState() metrics.State {
	c := n.Cluster()
	s := metrics.State{
		ID: n.id, Leader: n.lead.Load(),
		Committed: n.commit.Load(), Applied: n.Applied(),
		Members: make([]metrics.Member, 0, len(c.Members)),
		Active:  make(map[uint64]bool, len(c.Members)),
	}
	for id, m := range c.Members {
		s.Members = append(s.Members, metrics.Member{ID: uint64(id), Learner: m.IsLearner, Started: m.Started})
		if uint64(id) == n.id {
			s.Learner = m.IsLearner
			continue
		}
		// The strict check's own rule, so that what member prune reads on the leader is what
		// the leader would judge a change by.
		s.Active[uint64(id)] = n.HeardWithin(id, n.electionTimeout())
	}
	if s.Leader == n.id {
		s.Match = map[uint64]uint64{}
		for id, i := range n.Matches() {
			s.Match[uint64(id)] = i
		}
	}
	return s
}

// WaitJoined returns once this member has joined the cluster and applied its membership: it
// has applied everything the cluster had committed when WaitJoined was called (a linearizable
// read, which takes a leader and a majority), and its own publish is applied, so the cluster
// knows it as started. A member restarted with its publish already applied still waits for the
// read, so that it does not report a membership the cluster has moved past. It returns
// ErrStopped if the node stops first, or the context's error.
func (n *Node) WaitJoined(ctx context.Context) error {
	for {
		_, err := n.ReadIndex(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrStopped) {
			return err
		}
		// No leader or no answer yet: a joining member waits for the cluster to reach it.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(n.cfg.TickInterval):
		}
	}
	started := func() bool {
		m := n.Cluster().Member(n.ID())
		return m != nil && m.Started
	}
	if !n.WaitFor(ctx, started) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrStopped
	}
	return nil
}
