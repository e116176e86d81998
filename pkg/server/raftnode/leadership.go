package raftnode

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// Live reports whether member id counts as live by the liveness rule (HeardWithin) with raft's
// election timeout: what a leadership transfer asks of its target.
func (n *Node) Live(id membership.ID) bool { return n.HeardWithin(id, n.electionTimeout()) }

// Matches is, for each member, the highest index at which its log is known to match this
// member's: what a leader's checks ask (has a member acknowledged entries, has a learner caught
// up, who is most up to date). Only a leader tracks it; elsewhere the map is empty.
func (n *Node) Matches() map[membership.ID]uint64 {
	st := n.raft.Status()
	out := make(map[membership.ID]uint64, len(st.Progress))
	for id, pr := range st.Progress {
		out[membership.ID(id)] = pr.Match
	}
	return out
}

// WaitMatches waits, on the leader, until cond holds of Matches, and reports whether it did. It
// looks again each time a peer's acknowledgement has been stepped: raft's loop takes a message
// and a status request in turn, so the Matches read after Step returned include that message.
// It gives up (false) when ctx ends, this member stops or does not lead, or the term changes.
func (n *Node) WaitMatches(ctx context.Context, cond func(map[membership.ID]uint64) bool) bool {
	moved := n.current(&n.leaderCh)
	for {
		acked := n.current(&n.acked)
		if n.lead.Load() != n.id {
			return false
		}
		if cond(n.Matches()) {
			return true
		}
		select {
		case <-acked:
		case <-moved:
			return false
		case <-ctx.Done():
			return false
		case <-n.stopping:
			return false
		}
	}
}
