package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// MemberDiffersError reports a member that stands in the way of adding name with the given peer
// URLs, where an identical one would have been taken as added already: one with that name and
// other peer URLs, or one holding one of those peer URLs under another name. It is the server's
// refusal for errors.Is (rpcerr.ErrMemberNameExists or rpcerr.ErrPeerURLExists), with one line saying what
// differs.
type MemberDiffersError struct {
	Name     string
	PeerURLs []string
	// Other is the member in the way.
	Other Member
	// Refusal is rpcerr.ErrMemberNameExists or rpcerr.ErrPeerURLExists.
	Refusal error
}

func (e *MemberDiffersError) Error() string {
	if errors.Is(e.Refusal, rpcerr.ErrMemberNameExists) {
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
			return nil, &MemberDiffersError{Name: name, PeerURLs: peerURLs, Other: m, Refusal: rpcerr.ErrMemberNameExists}
		case shared:
			return nil, &MemberDiffersError{Name: name, PeerURLs: peerURLs, Other: m, Refusal: rpcerr.ErrPeerURLExists}
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
// a member list: what an add that finds its member already there prints again.
func AddedResult(list *ListResult, m Member, name string) *AddResult {
	return named(ChangeResult{Header: list.Header, ID: m.ID, Members: slices.Clone(list.Members)}, name)
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
	// Removed is the old member's removal by an earlier run that removed it first and stopped
	// before the add (RemovedFirst), when neither member is there; nil otherwise.
	Removed *membership.Event
	// OldLiveness is every source's word on the old member, as the run judged it; nil when not
	// asked (no old member).
	OldLiveness *Liveness
}

// SamePeerURLs reports whether the old member of a rebuild has exactly peerURLs: then only its
// liveness and history tell the old member from the new one, promoted.
func (r *Replacement) SamePeerURLs(peerURLs []string) bool {
	return r.Rebuild && r.Old != nil && r.New == nil && !r.Old.IsLearner &&
		slices.Equal(canonicalURLs(r.Old.PeerURLs), canonicalURLs(peerURLs))
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
	} else if !errors.Is(err, rpcerr.ErrMemberNotFound) {
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
	if alive && r.SamePeerURLs(peerURLs) {
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
	// OldLiveness is every source's word on the old member, as the run judges it; nil once it
	// is gone.
	OldLiveness *Liveness
	// Members is the membership the plan was made from.
	Members []Member
	New     Member
	// Now is nil when it was not counted (every step but the promotion done already).
	Now   *QuorumReport
	Steps []PlanStep
	// Err is the first step's refusal, nil when every step would be accepted.
	Err error
}

// ReplaceFacts is what clusterd says of a replacement before any change is made: the facts
// PlanReplace makes the plan of.
type ReplaceFacts struct {
	R        *Replacement
	Name     string
	PeerURLs []string
	// Remove is the dry run of the old member's removal against the configuration now, which
	// also says whether the old member is started and connected; nil once it is gone.
	Remove *DryRun
	// Add is the dry run of the new member's add as a learner against the configuration now;
	// nil once it is added, and while a dead old member is still to be removed first: a rebuilt
	// member's peer URLs are the old member's until the removal, and FindReplacement has
	// compared every other member's name and URLs.
	Add *DryRun
}

// ReplaceDryRun asks clusterd's dry runs of the replacement r, one for each step the server can
// judge against the configuration now, and plans it (PlanReplace). It needs clusterd (a
// *DryRunUnsupportedError otherwise).
func (c *Client) ReplaceDryRun(ctx context.Context, r *Replacement, name string, peerURLs []string) (*ReplacePlan, error) {
	f := ReplaceFacts{R: r, Name: name, PeerURLs: peerURLs}
	var err error
	if r.Old != nil {
		if f.Remove, err = c.MemberRemoveDryRun(ctx, r.OldID); err != nil {
			return nil, err
		}
	}
	if r.New == nil && (r.Old == nil || !r.RemoveFirst) {
		if f.Add, err = c.MemberAddDryRun(ctx, name, peerURLs, true); err != nil {
			return nil, err
		}
	}
	return PlanReplace(f)
}

// PlanReplace is the plan of a replacement from the facts its dry runs gathered: the steps in
// the order the run makes them, each with the voting configuration after it and the refusal
// it would meet. What the server judged, it takes as judged; the steps after those (the
// promotion, and the removal after it) are counted on from the server's reports, with the new
// member started and caught up, as the replacement waits for that, by the rule of the strict
// reconfiguration check.
func PlanReplace(f ReplaceFacts) (*ReplacePlan, error) {
	r := f.R
	p := &ReplacePlan{ClusterID: r.List.Header.ClusterID, OldRef: r.OldRef, Old: Member{Name: r.OldRef}, OldGone: r.Old == nil,
		OldLiveness: r.OldLiveness, Members: r.List.Members, New: Member{Name: f.Name, PeerURLs: f.PeerURLs, IsLearner: true}}
	switch {
	case r.Old != nil:
		p.Old = *r.Old
	case r.Removed != nil:
		p.Old = Member{ID: uint64(r.Removed.MemberID), Name: r.Removed.Name, PeerURLs: r.Removed.PeerURLs}
	}
	if r.New != nil {
		p.New = *r.New
		p.New.Name = f.Name
	}
	if r.Old != nil {
		if f.Remove == nil || f.Remove.Before == nil || f.Remove.After == nil {
			var why error
			if f.Remove != nil {
				why = f.Remove.Err
			}
			return nil, fmt.Errorf("the server judged the removal of %s without counting voters: %v", FormatID(r.OldID), why)
		}
		p.Now = f.Remove.Before
	}
	if r.RemoveFirst {
		p.Steps = removeFirstSteps(f, p)
	} else {
		p.Steps = addFirstSteps(f, p)
	}
	if i := slices.IndexFunc(p.Steps, func(s PlanStep) bool { return s.Err != nil }); i >= 0 {
		p.Err = p.Steps[i].Err
	}
	return p, nil
}

// addFirstSteps are the steps of a replacement whose old member answers (or is gone): add the
// learner, promote it, move leadership from the old member if it leads, remove the old member.
// It sets p.Now from the add's report when the old member is gone.
func addFirstSteps(f ReplaceFacts, p *ReplacePlan) []PlanStep {
	r := f.R
	add := PlanStep{Action: StepAdd, Who: f.Name, Done: r.New != nil, After: p.Now}
	if ad := f.Add; r.New == nil && ad != nil {
		if ad.Before != nil {
			p.Now = ad.Before
		}
		add.After, add.Err = ad.After, ad.Err
	}
	promote := PlanStep{Action: StepPromote, Who: f.Name, Done: r.New != nil && !r.New.IsLearner, After: add.After}
	if !promote.Done && add.After != nil {
		q := add.After.Plus(1, -1, 1, 1)
		promote.After, promote.Err = &q, q.Strict()
	}
	move := PlanStep{Action: StepMove, Who: p.Old.Name, Skip: r.Old == nil || !r.Old.IsLeader, After: promote.After}
	remove := PlanStep{Action: StepRemove, Who: p.Old.Name, Done: r.Old == nil, After: promote.After}
	if !remove.Done && promote.After != nil {
		// The old member's share of the voters, started and connected, from the removal's report.
		rm := f.Remove
		voter := 1
		if r.Old.IsLearner {
			voter = 0
		}
		q := promote.After.Plus(-voter, voter-1, rm.After.StartedVoters-rm.Before.StartedVoters, rm.After.ConnectedVoters-rm.Before.ConnectedVoters)
		remove.After, remove.Err = &q, q.Strict()
	}
	return []PlanStep{add, promote, move, remove}
}

// removeFirstSteps are the steps of a replacement whose old member is dead: remove it, add the
// learner, promote it. A removal an earlier run made (the old member gone) is done already, and
// the add is then judged by the server.
func removeFirstSteps(f ReplaceFacts, p *ReplacePlan) []PlanStep {
	remove := PlanStep{Action: StepRemove, Who: p.Old.Name}
	add := PlanStep{Action: StepAdd, Who: p.New.Name}
	if f.Remove != nil {
		remove.After, remove.Err = f.Remove.After, f.Remove.Err
		added := f.Remove.After.Plus(0, 1, 0, 0)
		add.After = &added
	} else {
		remove.Done = true
		if ad := f.Add; ad != nil {
			p.Now, remove.After = ad.Before, ad.Before
			add.After, add.Err = ad.After, ad.Err
		}
	}
	promote := PlanStep{Action: StepPromote, Who: p.New.Name}
	if add.After != nil {
		promoted := add.After.Plus(1, -1, 1, 1)
		promote.After, promote.Err = &promoted, promoted.Strict()
	}
	return []PlanStep{remove, add, promote}
}
