package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// MemberDiffersError reports a member that stands in the way of adding name with the given peer
// URLs, where an identical one would have been taken as added already: one with that name and
// other peer URLs, or one holding one of those peer URLs under another name. It is the server's
// refusal for errors.Is (ErrMemberNameExists or ErrPeerURLExists), with one line saying what
// differs.
type MemberDiffersError struct {
	Name     string
	PeerURLs []string
	// Other is the member in the way.
	Other Member
	// Refusal is ErrMemberNameExists or ErrPeerURLExists.
	Refusal error
}

func (e *MemberDiffersError) Error() string {
	if errors.Is(e.Refusal, ErrMemberNameExists) {
		return fmt.Sprintf("%v: member %s (%s) has peer URLs %s, not %s", e.Refusal, e.Name, FormatID(e.Other.ID),
			strings.Join(e.Other.PeerURLs, ","), strings.Join(e.PeerURLs, ","))
	}
	return fmt.Sprintf("%v: member %q (%s) has peer URLs %s, asked for %s under the name %s", e.Refusal, e.Other.Name,
		FormatID(e.Other.ID), strings.Join(e.Other.PeerURLs, ","), strings.Join(e.PeerURLs, ","), e.Name)
}

func (e *MemberDiffersError) Unwrap() error { return e.Refusal }

// FindAdded returns the member that an add of name with exactly peerURLs has made already: the
// member with those peer URLs (compared in canonical form, in any order) and that name, or no
// name yet (etcd learns a member's name when it starts). It returns nil when there is none, and a
// *MemberDiffersError when a member with that name or one of those URLs differs.
func FindAdded(members []Member, name string, peerURLs []string) (*Member, error) {
	want := canonicalURLs(peerURLs)
	for i, m := range members {
		have := canonicalURLs(m.PeerURLs)
		shared := slices.ContainsFunc(have, func(u string) bool { return slices.Contains(want, u) })
		switch {
		case slices.Equal(have, want) && (m.Name == name || m.Name == ""):
			return &members[i], nil
		case m.Name == name:
			return nil, &MemberDiffersError{Name: name, PeerURLs: peerURLs, Other: m, Refusal: ErrMemberNameExists}
		case shared:
			return nil, &MemberDiffersError{Name: name, PeerURLs: peerURLs, Other: m, Refusal: ErrPeerURLExists}
		}
	}
	return nil, nil
}

// canonicalURLs is urls in canonical form, sorted: two lists naming the same addresses compare
// equal. A URL that has no canonical form is kept as it is.
func canonicalURLs(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		if c, err := membership.CanonicalURL(u); err == nil {
			u = c
		}
		out[i] = u
	}
	slices.Sort(out)
	return out
}

// AddedResult is the AddResult a successful add of m under name would have answered, built from
// a member list: what an add that finds its member already there prints again. The name is the
// one asked for, which etcd does not know before the member starts.
func AddedResult(list *ListResult, m Member, name string) *AddResult {
	r := &AddResult{ChangeResult: ChangeResult{Header: list.Header, ID: m.ID, Members: slices.Clone(list.Members)}}
	for i := range r.Members {
		if r.Members[i].ID == m.ID {
			r.Members[i].Name = name
			r.Member = r.Members[i]
		}
	}
	return r
}

// Replacement is where a replacement of Old by a new member stands, read from one member list.
type Replacement struct {
	List *ListResult
	// OldRef names the member to replace as the command line did; OldID is its ID, and Old the
	// member, both zero once it is gone.
	OldRef string
	OldID  uint64
	Old    *Member
	// New is nil until the new member is added.
	New *Member
	// Rebuild is set when the new member has the old one's name (a machine rebuilt under its
	// old identity): then one member with that name is the old one while it is a voter, and the
	// new one once a learner with the new peer URLs; whether a voter that answers is the new
	// one, promoted, only its liveness tells (Settle).
	Rebuild bool
	// RemoveFirst is set when the old member is dead (Settle): it is removed before the new
	// member is added, the order in which etcd accepts the change (its strict reconfiguration
	// check refuses even a learner while a voter is down).
	RemoveFirst bool
}

// FindReplacement reads from list where the replacement of the member oldRef names by name
// with peerURLs stands. An old member that is gone is no error once the new member is there: a
// run that was interrupted after the removal.
//
// A rebuild (the new member under the old one's name: the machine rebuilt under its old
// identity, with its old peer URLs or new ones) finds one member for both: a learner with these
// peer URLs is the new one, the old one gone; otherwise that member is the old one, unless Settle
// finds it answers with these peer URLs (the new one, promoted). Nothing of either is no error
// for a rebuild: the old member was removed and the new one not added yet.
func FindReplacement(list *ListResult, oldRef, name string, peerURLs []string) (*Replacement, error) {
	r := &Replacement{List: list, OldRef: oldRef, Rebuild: oldRef == name}
	var err error
	r.OldID, err = ResolveIn(list.Members, oldRef)
	if err == nil {
		if i := slices.IndexFunc(list.Members, func(m Member) bool { return m.ID == r.OldID }); i >= 0 {
			r.Old = &list.Members[i]
		}
	} else if !errors.Is(err, ErrMemberNotFound) {
		return nil, err
	}
	others := list.Members
	if r.Old != nil && r.Old.Name == name {
		r.Rebuild = true
		if r.Old.IsLearner && slices.Equal(canonicalURLs(r.Old.PeerURLs), canonicalURLs(peerURLs)) {
			r.New, r.Old, r.OldID = r.Old, nil, 0
			return r, nil
		}
		others = slices.DeleteFunc(slices.Clone(list.Members), func(m Member) bool { return m.ID == r.OldID })
	}
	if r.New, err = FindAdded(others, name, peerURLs); err != nil {
		return nil, err
	}
	if r.New != nil {
		// FindAdded points into others: the member as the list has it.
		i := slices.IndexFunc(list.Members, func(m Member) bool { return m.ID == r.New.ID })
		r.New = &list.Members[i]
	}
	if r.Old == nil {
		r.OldID = 0
		if r.New == nil && !r.Rebuild {
			// A hex reference is taken as an ID that the server judges; here the list is the judge.
			return nil, notFound(list.Members, oldRef)
		}
	}
	if r.Old != nil && r.New != nil && r.Old.ID == r.New.ID {
		return nil, fmt.Errorf("member %s (%s) is the new member itself: name the member to replace", oldRef, FormatID(r.Old.ID))
	}
	return r, nil
}

// Settle decides, from whether the old member answers (alive), what FindReplacement could not:
// in a rebuild, a member that answers with the new member's peer URLs is the new member,
// promoted, and the old one gone; an old member that does not answer is removed first.
func (r *Replacement) Settle(alive bool, peerURLs []string) {
	if r.Old == nil {
		return
	}
	if r.Rebuild && r.New == nil && alive && slices.Equal(canonicalURLs(r.Old.PeerURLs), canonicalURLs(peerURLs)) {
		r.New, r.Old, r.OldID = r.Old, nil, 0
		return
	}
	r.RemoveFirst = !alive
}

// The steps of a replacement, in order.
const (
	StepAdd     = "add"
	StepPromote = "promote"
	StepMove    = "move-leader"
	StepRemove  = "remove"
)

// PlanStep is one step of a replacement: in a plan, with the voting configuration after it; in
// member replace's result, as the run found or made it (neither Done nor Skip: made by this run).
type PlanStep struct {
	Action string
	// Who names the member the step is about.
	Who string
	// Done is set for a step an earlier run made; it is skipped.
	Done bool
	// Skip is set for a step there is no need for: moving leadership when the old member does
	// not lead.
	Skip bool
	// After is nil when it cannot be counted: nothing was asked of the server, every step
	// having been done.
	After *QuorumReport
	// Err is the refusal the step would meet, nil when it would be accepted.
	Err error
}

// ReplacePlan is the verdict on a replacement: the configuration now and after each step.
type ReplacePlan struct {
	ClusterID uint64
	// OldRef names the member to replace as the command line did; Old is that member, or, once
	// it is gone (OldGone), a member with OldRef for its name and no ID.
	OldRef  string
	Old     Member
	OldGone bool
	New     Member
	// Now is nil when it was not counted (every step but the promotion done already).
	Now   *QuorumReport
	Steps []PlanStep
	// Err is the first step's refusal, nil when every step would be accepted.
	Err error
}

// ReplaceDryRun judges the replacement r with clusterd's dry runs: the add of the learner and the
// removal of the old member are asked of the server against the configuration now, which also
// says whether the old member is started and connected; the promotion and the removal are then
// counted on from the add's report, with the new member started and caught up, as the
// replacement waits for that. It needs clusterd (a *DryRunUnsupportedError otherwise).
func (c *Client) ReplaceDryRun(ctx context.Context, r *Replacement, name string, peerURLs []string) (*ReplacePlan, error) {
	p := &ReplacePlan{ClusterID: r.List.Header.ClusterID, OldRef: r.OldRef, OldGone: r.Old == nil}
	p.Old = Member{Name: r.OldRef}
	if r.Old != nil {
		p.Old = *r.Old
	}
	p.New = Member{Name: name, PeerURLs: peerURLs, IsLearner: true}
	if r.New != nil {
		p.New = *r.New
		p.New.Name = name
	}
	if r.RemoveFirst {
		return c.removeFirstDryRun(ctx, r, p)
	}
	// The two dry runs go at once, the removal's over a view of the same connection.
	var rm, ad *DryRun
	var rmErr, adErr error
	var wg sync.WaitGroup
	if r.Old != nil {
		view, release, err := c.At(c.dialed[c.at].Endpoint)
		if err != nil {
			return nil, err
		}
		defer release()
		wg.Go(func() { rm, rmErr = view.MemberRemoveDryRun(ctx, r.OldID) })
	}
	if r.New == nil {
		ad, adErr = c.MemberAddDryRun(ctx, name, peerURLs, true)
	}
	wg.Wait()
	if err := cmp.Or(rmErr, adErr); err != nil {
		return nil, err
	}
	// The old member's share of the started and connected voters, from the removal's report.
	var oldStarted, oldConnected int
	if r.Old != nil {
		if rm.Before == nil || rm.After == nil {
			return nil, fmt.Errorf("the server judged the removal of %s without counting voters: %v", FormatID(r.OldID), rm.Err)
		}
		p.Now = rm.Before
		oldStarted = rm.Before.StartedVoters - rm.After.StartedVoters
		oldConnected = rm.Before.ConnectedVoters - rm.After.ConnectedVoters
	}
	add := PlanStep{Action: StepAdd, Who: name, Done: r.New != nil, After: p.Now}
	if r.New == nil {
		if ad.Before != nil {
			p.Now = ad.Before
		}
		add.After, add.Err = ad.After, ad.Err
	}
	promote := PlanStep{Action: StepPromote, Who: name, Done: r.New != nil && !r.New.IsLearner, After: add.After}
	if !promote.Done && add.After != nil {
		q := add.After.Plus(1, -1, 1, 1)
		promote.After, promote.Err = &q, q.Strict()
	}
	move := PlanStep{Action: StepMove, Who: p.Old.Name, Skip: r.Old == nil || !r.Old.IsLeader, After: promote.After}
	remove := PlanStep{Action: StepRemove, Who: p.Old.Name, Done: r.Old == nil, After: promote.After}
	if !remove.Done && promote.After != nil {
		voter := 1
		if r.Old.IsLearner {
			voter = 0
		}
		q := promote.After.Plus(-voter, voter-1, -oldStarted, -oldConnected)
		remove.After, remove.Err = &q, q.Strict()
	}
	p.Steps = []PlanStep{add, promote, move, remove}
	return p.judged(), nil
}

// judged sets p.Err from the first refused step.
func (p *ReplacePlan) judged() *ReplacePlan {
	for _, s := range p.Steps {
		if s.Err != nil {
			p.Err = s.Err
			break
		}
	}
	return p
}

// removeFirstDryRun judges the replacement of a dead old member: the removal is asked of the
// server against the configuration now; the add of the learner and its promotion are counted on
// from the removal's report, the new member started and caught up, as the replacement waits for
// that. The add is not asked of the server: a rebuilt member's peer URLs are the old member's
// until the removal, and FindReplacement has compared every other member's name and URLs.
func (c *Client) removeFirstDryRun(ctx context.Context, r *Replacement, p *ReplacePlan) (*ReplacePlan, error) {
	rm, err := c.MemberRemoveDryRun(ctx, r.OldID)
	if err != nil {
		return nil, err
	}
	if rm.Before == nil || rm.After == nil {
		return nil, fmt.Errorf("the server judged the removal of %s without counting voters: %v", FormatID(r.OldID), rm.Err)
	}
	p.Now = rm.Before
	remove := PlanStep{Action: StepRemove, Who: p.Old.Name, After: rm.After, Err: rm.Err}
	added := rm.After.Plus(0, 1, 0, 0)
	add := PlanStep{Action: StepAdd, Who: p.New.Name, After: &added}
	promoted := added.Plus(1, -1, 1, 1)
	promote := PlanStep{Action: StepPromote, Who: p.New.Name, After: &promoted, Err: promoted.Strict()}
	p.Steps = []PlanStep{remove, add, promote}
	return p.judged(), nil
}
