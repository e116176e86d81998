package printer

import (
	"bytes"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// TestReplaceGolden pins member replace's output: member add's for the add (the environment
// alone in env), the success lines of the later steps in simple, and the plan of --dry-run.
func TestReplaceGolden(t *testing.T) {
	for _, f := range []Format{Simple, Env} {
		p, _ := New(f)
		var b bytes.Buffer
		if err := p.ReplaceAdd(&b, addResult(true)); err != nil {
			t.Fatal(err)
		}
		for _, k := range []Kind{MemberPromote, MemberRemove} {
			if err := p.ReplaceChange(&b, k, changeResult()); err != nil {
				t.Fatal(err)
			}
		}
		golden(t, "testdata/member_replace."+string(f)+".golden", b.Bytes())
	}
	now := membership.QuorumReport{Voters: 3, StartedVoters: 3, ConnectedVoters: 2}.Plus(0, 0, 0, 0)
	added := now.Plus(0, 1, 0, 0)
	promoted := added.Plus(1, -1, 1, 1)
	removed := promoted.Plus(-1, 0, -1, 0)
	plans := map[string]*client.ReplacePlan{
		"member_replace_dry_run": {
			ClusterID: 0x773b2a2c09f37d50, Old: client.Member{ID: 0x96dbf27657837fe1, Name: "infra1", IsLeader: true},
			New: client.Member{Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}}, Now: &now,
			Steps: []client.PlanStep{
				{Action: client.StepAdd, Who: "infra3", After: &added},
				{Action: client.StepPromote, Who: "infra3", After: &promoted},
				{Action: client.StepMove, Who: "infra3", After: &promoted},
				{Action: client.StepRemove, Who: "infra1", After: &removed},
			},
		},
		"member_replace_dry_run_done": {
			ClusterID: 0x773b2a2c09f37d50, Old: client.Member{Name: "infra1"}, OldGone: true,
			New: client.Member{ID: 0xcdafbcc8ff50545c, Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}},
			Steps: []client.PlanStep{
				{Action: client.StepAdd, Who: "infra3", Done: true},
				{Action: client.StepPromote, Who: "infra3", Done: true},
				{Action: client.StepMove, Who: "infra3", Skip: true},
				{Action: client.StepRemove, Who: "infra1", Done: true},
			},
		},
	}
	refused := removed
	refused.StartedVoters, refused.ConnectedVoters = 1, 1
	refused = refused.Plus(0, 0, 0, 0)
	plans["member_replace_dry_run_refused"] = &client.ReplacePlan{
		ClusterID: 0x773b2a2c09f37d50, Old: client.Member{ID: 0x96dbf27657837fe1, Name: "infra1"},
		New: client.Member{Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}}, Now: &now,
		Steps: []client.PlanStep{
			{Action: client.StepAdd, Who: "infra3", After: &added},
			{Action: client.StepPromote, Who: "infra3", After: &promoted},
			{Action: client.StepMove, Who: "infra3", After: &promoted, Skip: true},
			{Action: client.StepRemove, Who: "infra1", After: &refused, Err: refused.Strict()},
		},
		Err: refused.Strict(),
	}
	p, _ := New(Simple)
	for name, plan := range plans {
		var b bytes.Buffer
		if err := p.ReplacePlan(&b, plan); err != nil {
			t.Fatal(err)
		}
		golden(t, "testdata/"+name+".simple.golden", b.Bytes())
	}
	if err := (Printer{format: Env}).ReplacePlan(&bytes.Buffer{}, plans["member_replace_dry_run"]); err == nil {
		t.Error("env printed a plan; want a refusal")
	}
}
