package client

import (
	"context"
	"errors"
	"slices"
	"time"
)

// MemberStatus is one member of the cluster, as the membership lists it, with its own status
// answer: Status when it answered, Err when it did not (or has no client URL to ask).
type MemberStatus struct {
	Member
	Status *Status
	Err    error
	// Behind is the leader's raft index less this member's; BehindKnown is false when the
	// member did not answer or no leader answered.
	Behind      uint64
	BehindKnown bool
}

// Reachable reports whether the member answered its status call.
func (m MemberStatus) Reachable() bool { return m.Status != nil }

// ClusterStatus is one view of one cluster: every member asked for its status at once.
type ClusterStatus struct {
	// Header is the answer of the leader's status when it answered, else of the member list.
	Header  Header
	Members []MemberStatus
	// Leader is the member that says it leads in the highest term among the answers, 0 when
	// none does; LeaderTerm is that term.
	Leader, LeaderTerm uint64
	// Split is set when the answers, the members' and the given endpoints', prove two groups
	// apart or more: then the rest is one group's view, and no verdict on the whole.
	Split *SplitError
}

// Quorum counts the voters (started or not), the learners, the started voters, the voters that
// answered (as ConnectedVoters), the quorum and the fault tolerance: how many more voters may
// fail with a quorum of live voters remaining, negative when the live ones are already short of
// one. The same report and arithmetic as a dry run's, from what this call saw.
func (s *ClusterStatus) Quorum() QuorumReport {
	var voters, learners, started, live int
	for _, m := range s.Members {
		switch {
		case m.IsLearner:
			learners++
			continue
		case m.Started:
			started++
		}
		voters++
		if m.Reachable() {
			live++
		}
	}
	// Plus from the zero report is the one place quorum and fault tolerance are counted.
	return QuorumReport{}.Plus(voters, learners, started, live)
}

// Healthy reports whether every voter answered, the cluster has a leader, and no answer proves
// a second group apart from it.
func (s *ClusterStatus) Healthy() bool {
	q := s.Quorum()
	return s.Leader != 0 && q.ConnectedVoters == q.Voters && s.Split == nil
}

// ErrNoClientURL is the status of a member that has no client URL to ask: added, not started.
var ErrNoClientURL = errors.New("no client URLs: not started yet")

// ClusterStatus lists the members as the first endpoint that answers has applied them (also
// without a leader) and asks every member for its status through its first client URL, all at
// once, each on its own connection (Sibling: c's TLS, credentials and timeouts), each within
// timeout. Only the list failing is an error: a member that does not answer is its row's Err.
// The given endpoints that are no member's first client URL are asked too, at the same time, so
// that a group of members the list does not know (two clusters under one ID) is seen: the
// answers of both are judged by Split.
func (c *Client) ClusterStatus(ctx context.Context, timeout time.Duration) (*ClusterStatus, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	list, _, err := c.list(lctx, false)
	cancel()
	if err != nil {
		return nil, err
	}
	out := &ClusterStatus{Header: list.Header, Members: make([]MemberStatus, len(list.Members))}
	var eps []string
	var asked []int
	for i, m := range list.Members {
		out.Members[i].Member = m
		out.Members[i].IsLeader = false
		if len(m.ClientURLs) == 0 {
			out.Members[i].Err = ErrNoClientURL
			continue
		}
		eps, asked = append(eps, m.ClientURLs[0]), append(asked, i)
	}
	n := len(eps)
	for _, e := range c.GivenEndpoints() {
		if !slices.ContainsFunc(eps[:n], func(u string) bool { return sameEndpoint(u, e) }) {
			eps = append(eps, e)
		}
	}
	sts := c.StatusOfEach(ctx, eps, timeout)
	for j, st := range sts[:n] {
		out.Members[asked[j]].Status, out.Members[asked[j]].Err = st.Status, st.Err
	}
	out.Split = c.Split(ctx, sts, timeout)
	out.settleLeader()
	return out, nil
}

// sameEndpoint reports whether a and b reach the same address (a client URL and an endpoint as
// given, with or without a scheme), as parseEndpoint reads them.
func sameEndpoint(a, b string) bool {
	x, _, errA := parseEndpoint(a, false)
	y, _, errB := parseEndpoint(b, false)
	return errA == nil && errB == nil && x == y
}

// settleLeader finds the leader among the answers and each member's distance to it.
func (s *ClusterStatus) settleLeader() {
	sts := make([]*Status, len(s.Members))
	for i, m := range s.Members {
		sts[i] = m.Status
	}
	if s.Split != nil {
		// Only the group of the member that listed the members is this view's: the other
		// group's leader, whatever its term, is not this list's.
		sts = sameGroup(sts, s.Header.MemberID)
	}
	leader := LeaderOf(sts)
	if leader == nil {
		return
	}
	s.Leader, s.LeaderTerm, s.Header = leader.Header.MemberID, leader.RaftTerm, leader.Header
	for i := range s.Members {
		m := &s.Members[i]
		m.IsLeader = m.ID == s.Leader
		if m.Status != nil {
			m.BehindKnown, m.Behind = true, max(leader.RaftIndex, m.Status.RaftIndex)-m.Status.RaftIndex
		}
	}
}

// sameGroup is the answers that follow the leader member lister follows; all of them when lister
// did not answer or follows none.
func sameGroup(sts []*Status, lister uint64) []*Status {
	i := slices.IndexFunc(sts, func(st *Status) bool { return st != nil && st.Header.MemberID == lister })
	if i < 0 || sts[i].Leader == 0 {
		return sts
	}
	lead := sts[i].Leader
	out := make([]*Status, len(sts))
	for j, st := range sts {
		if st != nil && st.Leader == lead && st.Header.ClusterID == sts[i].Header.ClusterID {
			out[j] = st
		}
	}
	return out
}

// LeaderOf is the answer of the member that says it leads, in the highest term among the
// answers; nil when none does. Nil entries (no answer) are skipped.
func LeaderOf(sts []*Status) *Status {
	var leader *Status
	for _, st := range sts {
		if st != nil && st.IsLeader() && (leader == nil || st.RaftTerm > leader.RaftTerm) {
			leader = st
		}
	}
	return leader
}
