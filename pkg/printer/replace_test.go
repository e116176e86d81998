package printer

import (
	"bytes"
	"slices"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// replacing is a replacement of infra1 by infra3, the learner of addResult, after its add, and
// the answers to its later steps: the promotion, and the removal of infra1.
func replacing() (*ReplaceResult, map[Kind]*client.ChangeResult) {
	r := &ReplaceResult{OldRef: "infra1", Old: &members[3], Latest: client.ListResult{Header: header, Members: slices.Clone(members[1:])}}
	r.Added = addResult(true)
	r.Record(client.PlanStep{Action: client.StepAdd}, &r.Added.ChangeResult)
	promoted := slices.Clone(members)
	promoted[0].IsLearner, promoted[0].Started, promoted[0].ClientURLs = false, true, []string{"http://127.0.0.1:42379"}
	return r, map[Kind]*client.ChangeResult{
		MemberPromote: {Header: header, ID: promoted[0].ID, Members: promoted},
		MemberRemove:  {Header: header, ID: members[3].ID, Members: promoted[:3]},
	}
}

// replaced is the replacement of replacing at its end: promoted, leadership not moved (infra0
// leads), infra1 removed.
func replaced() (*ReplaceResult, map[Kind]*client.ChangeResult) {
	r, answers := replacing()
	r.Record(client.PlanStep{Action: client.StepPromote}, answers[MemberPromote])
	r.Record(client.PlanStep{Action: client.StepMove, Skip: true}, nil)
	r.Record(client.PlanStep{Action: client.StepRemove}, answers[MemberRemove])
	return r, answers
}

// TestReplaceGolden pins member replace's output: member add's for the add (the environment
// alone in env), the success lines of the later steps in simple, in json a line after the add
// and one at the end; and the same command run again once all is done.
func TestReplaceGolden(t *testing.T) {
	runGolden(t, []goldenCase{
		{"member_replace", MemberReplace, func(p Printer, b *bytes.Buffer) error {
			r, answers := replacing()
			if err := p.ReplaceAdd(b, r); err != nil {
				return err
			}
			r.Record(client.PlanStep{Action: client.StepPromote}, answers[MemberPromote])
			if err := p.ReplaceChange(b, MemberPromote, answers[MemberPromote]); err != nil {
				return err
			}
			r.Record(client.PlanStep{Action: client.StepMove, Skip: true}, nil)
			r.Record(client.PlanStep{Action: client.StepRemove}, answers[MemberRemove])
			if err := p.ReplaceChange(b, MemberRemove, answers[MemberRemove]); err != nil {
				return err
			}
			return p.ReplaceDone(b, r)
		}},
		{"member_replace_again", MemberReplace, func(p Printer, b *bytes.Buffer) error {
			_, answers := replacing()
			list := &client.ListResult{Header: header, Members: answers[MemberRemove].Members}
			r := &ReplaceResult{OldRef: "infra1", Latest: *list, Added: client.AddedResult(list, list.Members[0], "infra3")}
			r.Record(client.PlanStep{Action: client.StepAdd, Done: true}, nil)
			if err := p.ReplaceAdd(b, r); err != nil {
				return err
			}
			r.Record(client.PlanStep{Action: client.StepPromote, Done: true}, nil)
			r.Record(client.PlanStep{Action: client.StepMove, Skip: true}, nil)
			r.Record(client.PlanStep{Action: client.StepRemove, Done: true}, nil)
			return p.ReplaceDone(b, r)
		}},
	})
	now := membership.QuorumReport{Voters: 3, StartedVoters: 3, ConnectedVoters: 2}.Plus(0, 0, 0, 0)
	added := now.Plus(0, 1, 0, 0)
	promoted := added.Plus(1, -1, 1, 1)
	removed := promoted.Plus(-1, 0, -1, 0)
	plans := map[string]*client.ReplacePlan{
		"member_replace_dry_run": {
			ClusterID: 0x773b2a2c09f37d50, OldRef: "infra1", Old: client.Member{ID: 0x96dbf27657837fe1, Name: "infra1", IsLeader: true},
			OldLiveness: &client.Liveness{OwnURL: true, Endpoint: "10.0.0.1:2379", Leader: 0x96dbf27657837fe1, Leads: true},
			New:         client.Member{Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}}, Now: &now,
			Steps: []client.PlanStep{
				{Action: client.StepAdd, Who: "infra3", After: &added},
				{Action: client.StepPromote, Who: "infra3", After: &promoted},
				{Action: client.StepMove, Who: "infra1", After: &promoted},
				{Action: client.StepRemove, Who: "infra1", After: &removed},
			},
		},
		"member_replace_dry_run_done": {
			ClusterID: 0x773b2a2c09f37d50, OldRef: "infra1", Old: client.Member{Name: "infra1"}, OldGone: true,
			New: client.Member{ID: 0xcdafbcc8ff50545c, Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}},
			Steps: []client.PlanStep{
				{Action: client.StepAdd, Who: "infra3", Done: true},
				{Action: client.StepPromote, Who: "infra3", Done: true},
				{Action: client.StepMove, Who: "infra1", Skip: true},
				{Action: client.StepRemove, Who: "infra1", Done: true},
			},
		},
	}
	refused := removed
	refused.StartedVoters, refused.ConnectedVoters = 1, 1
	refused = refused.Plus(0, 0, 0, 0)
	plans["member_replace_dry_run_refused"] = &client.ReplacePlan{
		ClusterID: 0x773b2a2c09f37d50, OldRef: "infra1", Old: client.Member{ID: 0x96dbf27657837fe1, Name: "infra1"},
		// its advertised client URL wrong: only the leader hears it
		OldLiveness: &client.Liveness{Leader: 0xcdafbcc8ff50545c, LeaderSees: true},
		Members:     []client.Member{{ID: 0xcdafbcc8ff50545c, Name: "infra0"}},
		New:         client.Member{Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}}, Now: &now,
		Steps: []client.PlanStep{
			{Action: client.StepAdd, Who: "infra3", After: &added},
			{Action: client.StepPromote, Who: "infra3", After: &promoted},
			{Action: client.StepMove, Who: "infra1", After: &promoted, Skip: true},
			{Action: client.StepRemove, Who: "infra1", After: &refused, Err: refused.Strict()},
		},
		Err: refused.Strict(),
	}
	for _, f := range kinds[MemberReplace].dryRun {
		p, _ := New(f)
		for name, plan := range plans {
			var b bytes.Buffer
			if err := p.ReplacePlan(&b, plan); err != nil {
				t.Fatal(err)
			}
			golden(t, "testdata/"+name+"."+string(f)+".golden", b.Bytes())
		}
	}
	if err := (Printer{format: Env}).ReplacePlan(&bytes.Buffer{}, plans["member_replace_dry_run"]); err == nil {
		t.Error("env printed a plan; want a refusal")
	}
}
