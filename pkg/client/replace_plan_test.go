package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// q is a configuration of voters, learners, started and connected voters, quorum counted.
func q(voters, learners, started, connected int) *QuorumReport {
	r := QuorumReport{}.Plus(voters, learners, started, connected)
	return &r
}

// dryRun is a verdict that counted before and after, refused with err (nil: accepted).
func dryRun(before, after *QuorumReport, err error) *DryRun {
	return &DryRun{Before: before, After: after, Err: err}
}

// planLines is p in a line per step: "action [done|skip] [V L S C] [refused]", "now V L S C"
// first, "verdict ..." last.
func planLines(p *ReplacePlan) []string {
	counts := func(r *QuorumReport) string {
		if r == nil {
			return ""
		}
		return fmt.Sprintf(" %d %d %d %d", r.Voters, r.Learners, r.StartedVoters, r.ConnectedVoters)
	}
	out := []string{"now" + counts(p.Now)}
	for _, s := range p.Steps {
		l := s.Action + " " + s.Who
		switch {
		case s.Done:
			l += " done"
		case s.Skip:
			l += " skip"
		}
		l += counts(s.After)
		if s.Err != nil {
			l += " refused"
		}
		out = append(out, l)
	}
	verdict := "verdict accepted"
	if p.Err != nil {
		verdict = "verdict " + p.Err.Error()
	}
	return append(out, verdict)
}

// PlanReplace turns the dry runs' facts into the plan the run follows: the order (add first for
// a live old member, remove first for a dead one), what is done already, and the quorum after
// each step counted on from the server's reports.
func TestPlanReplace(t *testing.T) {
	urls := []string{"http://10.0.0.4:2380"}
	leader := Member{ID: 0xa, Name: "infra1", PeerURLs: []string{"http://10.0.0.2:2380"}, Started: true, IsLeader: true}
	follower := leader
	follower.IsLeader = false
	oldLearner := follower
	oldLearner.IsLearner = true
	learner := Member{ID: 0xc, Name: "infra3", PeerURLs: urls, IsLearner: true}
	voter := learner
	voter.IsLearner, voter.Started = false, true
	removal := &membership.Event{RaftIndex: 20, Change: "remove", MemberID: 0xa, Name: "infra1", By: membership.Origin{Via: wire.ViaMemberReplaceRemoveFirst}}
	tooMany := errors.New("etcdserver: too many learner members in cluster")
	for _, tt := range []struct {
		name string
		r    Replacement
		// newName is the new member's name, infra3 unless set (a rebuild: infra1).
		newName string
		remove  *DryRun
		add     *DryRun
		want    []string
	}{
		{
			name:   "live leader: add first, leadership moved",
			r:      Replacement{Old: &leader, OldID: 0xa},
			remove: dryRun(q(3, 0, 3, 3), q(2, 0, 2, 2), nil),
			add:    dryRun(q(3, 0, 3, 3), q(3, 1, 3, 3), nil),
			want: []string{"now 3 0 3 3", "add infra3 3 1 3 3", "promote infra3 4 0 4 4", "move-leader infra1 4 0 4 4",
				"remove infra1 3 0 3 3", "verdict accepted"},
		},
		{
			name:   "live follower: no move",
			r:      Replacement{Old: &follower, OldID: 0xa},
			remove: dryRun(q(3, 0, 3, 3), q(2, 0, 2, 2), nil),
			add:    dryRun(q(3, 0, 3, 3), q(3, 1, 3, 3), nil),
			want: []string{"now 3 0 3 3", "add infra3 3 1 3 3", "promote infra3 4 0 4 4", "move-leader infra1 skip 4 0 4 4",
				"remove infra1 3 0 3 3", "verdict accepted"},
		},
		{
			name:   "old member a learner: its removal takes no voter",
			r:      Replacement{Old: &oldLearner, OldID: 0xa},
			remove: dryRun(q(3, 1, 3, 3), q(3, 0, 3, 3), nil),
			add:    dryRun(q(3, 1, 3, 3), q(3, 2, 3, 3), nil),
			want: []string{"now 3 1 3 3", "add infra3 3 2 3 3", "promote infra3 4 1 4 4", "move-leader infra1 skip 4 1 4 4",
				"remove infra1 4 0 4 4", "verdict accepted"},
		},
		{
			name:   "learner there already: add done, promotion counted from now",
			r:      Replacement{Old: &follower, OldID: 0xa, New: &learner},
			remove: dryRun(q(3, 1, 3, 3), q(2, 1, 2, 2), nil),
			want: []string{"now 3 1 3 3", "add infra3 done 3 1 3 3", "promote infra3 4 0 4 4", "move-leader infra1 skip 4 0 4 4",
				"remove infra1 3 0 3 3", "verdict accepted"},
		},
		{
			name:   "new member a voter already: only the removal left",
			r:      Replacement{Old: &leader, OldID: 0xa, New: &voter},
			remove: dryRun(q(4, 0, 4, 4), q(3, 0, 3, 3), nil),
			want: []string{"now 4 0 4 4", "add infra3 done 4 0 4 4", "promote infra3 done 4 0 4 4", "move-leader infra1 4 0 4 4",
				"remove infra1 3 0 3 3", "verdict accepted"},
		},
		{
			name: "old member gone, new one there: all done, nothing counted",
			r:    Replacement{New: &voter},
			want: []string{"now", "add infra3 done", "promote infra3 done", "move-leader infra1 skip", "remove infra1 done", "verdict accepted"},
		},
		{
			// 4 voters, 2 connected (the old member one): the promotion makes 3 of 5, the removal 2 of 4
			name:   "quorum: the removal would leave the connected voters short",
			r:      Replacement{Old: &follower, OldID: 0xa},
			remove: dryRun(q(4, 0, 4, 2), q(3, 0, 3, 1), nil),
			add:    dryRun(q(4, 0, 4, 2), q(4, 1, 4, 2), nil),
			want: []string{"now 4 0 4 2", "add infra3 4 1 4 2", "promote infra3 5 0 5 3", "move-leader infra1 skip 5 0 5 3",
				"remove infra1 4 0 4 2 refused", "verdict " + membership.ErrUnhealthy.Error()},
		},
		{
			name:   "quorum: the add refused before counting (learner limit)",
			r:      Replacement{Old: &follower, OldID: 0xa},
			remove: dryRun(q(3, 1, 3, 3), q(2, 1, 2, 2), nil),
			add:    dryRun(nil, nil, tooMany),
			want: []string{"now 3 1 3 3", "add infra3 refused", "promote infra3", "move-leader infra1 skip", "remove infra1",
				"verdict " + tooMany.Error()},
		},
		{
			name:   "dead old member: removed first",
			r:      Replacement{Old: &follower, OldID: 0xa, RemoveFirst: true},
			remove: dryRun(q(3, 0, 2, 2), q(2, 0, 2, 2), nil),
			want:   []string{"now 3 0 2 2", "remove infra1 2 0 2 2", "add infra3 2 1 2 2", "promote infra3 3 0 3 3", "verdict accepted"},
		},
		{
			name:    "rebuild under the same name: removed first, added under its name",
			r:       Replacement{Old: &follower, OldID: 0xa, RemoveFirst: true, Rebuild: true},
			newName: "infra1",
			remove:  dryRun(q(3, 0, 2, 2), q(2, 0, 2, 2), nil),
			want:    []string{"now 3 0 2 2", "remove infra1 2 0 2 2", "add infra1 2 1 2 2", "promote infra1 3 0 3 3", "verdict accepted"},
		},
		{
			// 5 voters, 2 of them down: the old one and another; 3 started of 4 after the removal,
			// 4 of 5 after the promotion, so the plan is accepted; 2 down besides the old one is not
			name:   "quorum: dead old member with another voter down",
			r:      Replacement{Old: &follower, OldID: 0xa, RemoveFirst: true},
			remove: dryRun(q(5, 0, 3, 3), q(4, 0, 3, 3), nil),
			want:   []string{"now 5 0 3 3", "remove infra1 4 0 3 3", "add infra3 4 1 3 3", "promote infra3 5 0 4 4", "verdict accepted"},
		},
		{
			name:   "quorum: dead old member, the removal refused",
			r:      Replacement{Old: &follower, OldID: 0xa, RemoveFirst: true},
			remove: dryRun(q(3, 0, 1, 1), q(2, 0, 1, 1), membership.ErrNotEnoughStarted),
			want: []string{"now 3 0 1 1", "remove infra1 2 0 1 1 refused", "add infra3 2 1 1 1", "promote infra3 3 0 2 2",
				"verdict " + membership.ErrNotEnoughStarted.Error()},
		},
		{
			name: "resumed after an earlier run's removal: the add judged by the server",
			r:    Replacement{RemoveFirst: true, Removed: removal},
			add:  dryRun(q(2, 0, 2, 2), q(2, 1, 2, 2), nil),
			want: []string{"now 2 0 2 2", "remove infra1 done 2 0 2 2", "add infra3 2 1 2 2", "promote infra3 3 0 3 3", "verdict accepted"},
		},
		{
			name: "rebuild after the removal, before the add: added first, old member gone",
			r:    Replacement{Rebuild: true}, newName: "infra1",
			add: dryRun(q(2, 0, 2, 2), q(2, 1, 2, 2), nil),
			want: []string{"now 2 0 2 2", "add infra1 2 1 2 2", "promote infra1 3 0 3 3", "move-leader infra1 skip 3 0 3 3",
				"remove infra1 done 3 0 3 3", "verdict accepted"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := cmp.Or(tt.newName, "infra3")
			r := tt.r
			r.List, r.OldRef = &ListResult{Header: Header{ClusterID: 0x77}}, "infra1"
			p, err := PlanReplace(ReplaceFacts{R: &r, Name: name, PeerURLs: urls, Remove: tt.remove, Add: tt.add})
			if err != nil {
				t.Fatal(err)
			}
			if got := planLines(p); !slices.Equal(got, tt.want) {
				t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if p.ClusterID != 0x77 || p.New.Name != name || p.OldGone != (r.Old == nil) {
				t.Errorf("plan of cluster %x, new %q, old gone %v", p.ClusterID, p.New.Name, p.OldGone)
			}
			if r.Removed != nil && (p.Old.ID != 0xa || p.Old.Name != "infra1") {
				t.Errorf("resumed plan's old member %+v, want the removed one", p.Old)
			}
		})
	}
	// A removal the server did not count voters for cannot be planned on.
	r := Replacement{List: &ListResult{}, OldRef: "infra1", Old: &follower, OldID: 0xa}
	if _, err := PlanReplace(ReplaceFacts{R: &r, Name: "infra3", Remove: dryRun(nil, nil, rpcerr.ErrMemberNotFound)}); err == nil || !strings.Contains(err.Error(), "without counting voters") {
		t.Errorf("removal judged without counts: %v", err)
	}
}
