package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Group is members that answered as one cluster: under one cluster ID, following one leader.
type Group struct {
	ClusterID uint64
	// Leader is the member they follow; Term the highest term among their answers.
	Leader, Term uint64
	// Members are the IDs of the members that answered, Endpoints where each answered, in the
	// same order.
	Members   []uint64
	Endpoints []string
	// Membership is the member IDs one of them lists (its own applied membership), nil when it
	// was not read.
	Membership []uint64
}

// SplitError reports answers that prove two groups of members or more, each deciding on its own
// (after a force-new-cluster, the old members restarted on their old data elect their own leader
// under the same cluster ID): no one cluster, healthy or not, is what answered. Every group is
// listed; none is folded into another.
type SplitError struct {
	// Why says what proves it.
	Why    string
	Groups []Group
}

func (e *SplitError) Error() string {
	gs := make([]string, len(e.Groups))
	for i, g := range e.Groups {
		gs[i] = fmt.Sprintf("cluster %s led by %s at term %d: %s", FormatID(g.ClusterID), FormatID(g.Leader), g.Term, strings.Join(FormatIDs(g.Members), ","))
		if g.Membership != nil {
			gs[i] += " (members " + strings.Join(FormatIDs(g.Membership), ",") + ")"
		}
	}
	return fmt.Sprintf("split: %d groups answer, each on its own (%s): %s", len(e.Groups), e.Why, strings.Join(gs, "; "))
}

// Groups sorts the answers into groups, one per cluster ID and leader followed, the answers
// without a leader left out, in the order of their first answer; one member that answered on
// several endpoints counts once.
func Groups(answers []EndpointStatus) []Group {
	var gs []Group
	for _, a := range answers {
		st := a.Status
		if st == nil || st.Leader == 0 {
			continue
		}
		i := slices.IndexFunc(gs, func(g Group) bool { return g.ClusterID == st.Header.ClusterID && g.Leader == st.Leader })
		if i < 0 {
			gs = append(gs, Group{ClusterID: st.Header.ClusterID, Leader: st.Leader})
			i = len(gs) - 1
		}
		g := &gs[i]
		g.Term = max(g.Term, st.RaftTerm)
		if !slices.Contains(g.Members, st.Header.MemberID) {
			g.Members, g.Endpoints = append(g.Members, st.Header.MemberID), append(g.Endpoints, a.Endpoint)
		}
	}
	return gs
}

// SplitOf judges groups (Groups), with their memberships when read, and returns the proof that
// two of them are apart, nil when none proves it. Raft allows one leader per term, and a member
// follows the leader of the newest term it has heard of, so groups under one cluster may differ
// for a moment (a member that has not heard of the new leader yet); they are proven apart by:
// different cluster IDs; two leaders in the same term; or each holding a member that answered
// and that the other's membership lacks (a member that left stops, and one added is not yet
// followed by those that lack it only while they lag, never both ways at once).
func SplitOf(groups []Group) *SplitError {
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			var why string
			switch {
			case g.ClusterID != h.ClusterID:
				why = fmt.Sprintf("cluster IDs %s and %s", FormatID(g.ClusterID), FormatID(h.ClusterID))
			case g.Term == h.Term:
				why = fmt.Sprintf("two leaders in term %d", g.Term)
			case outside(g, h) && outside(h, g):
				why = "each group has members the other's membership lacks"
			default:
				continue
			}
			return &SplitError{Why: why, Groups: groups}
		}
	}
	return nil
}

// outside reports whether a member of g that answered is not in h's membership, when it was
// read.
func outside(g, h Group) bool {
	if h.Membership == nil {
		return false
	}
	return slices.ContainsFunc(g.Members, func(id uint64) bool { return !slices.Contains(h.Membership, id) })
}

// Split looks for groups of members apart among answers (SplitOf), reading each group's
// membership from one of its members (its leader's answer first) when the answers alone do not
// prove it, each read within timeout; nil when the answers are one cluster, or not proven
// otherwise. Answers of one group only cost nothing more.
func (c *Client) Split(ctx context.Context, answers []EndpointStatus, timeout time.Duration) *SplitError {
	groups := Groups(answers)
	if len(groups) < 2 {
		return nil
	}
	if s := SplitOf(groups); s != nil {
		return s
	}
	eps := make([]string, len(groups))
	for i, g := range groups {
		eps[i] = g.Endpoints[max(slices.Index(g.Members, g.Leader), 0)] // the leader's, else the first
	}
	// Each call fills in its own group.
	c.onEach(ctx, eps, timeout, func(ctx context.Context, i int, one *Client, _ func(context.Context, *Client)) error {
		ms, err := one.LocalMemberList(ctx)
		if err != nil {
			return err
		}
		groups[i].Membership = make([]uint64, 0, len(ms))
		for _, m := range ms {
			groups[i].Membership = append(groups[i].Membership, m.ID)
		}
		return nil
	})
	return SplitOf(groups)
}
