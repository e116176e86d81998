package command

import (
	"errors"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// TestPruneQuorumAfter: a dead voter goes only when the voters left that answer form their
// quorum, and never the last voter; a refusal is exit 12 (quorum protection).
func TestPruneQuorumAfter(t *testing.T) {
	v := func(id uint64) client.Member { return client.Member{ID: id, Started: true} }
	learner := client.Member{ID: 9, IsLearner: true}
	for _, tt := range []struct {
		name      string
		members   []client.Member
		dead      uint64
		answering []uint64
		want      string
	}{
		{"one of three dead", []client.Member{v(1), v(2), v(3)}, 3, []uint64{1, 2}, ""},
		{"two of five dead", []client.Member{v(1), v(2), v(3), v(4), v(5)}, 5, []uint64{1, 2, 3}, ""},
		{"the others short of a quorum", []client.Member{v(1), v(2), v(3), v(4)}, 4, []uint64{1}, "1 of the 3 voters left answer, short of their quorum of 2 (etcdserver: re-configuration failed due to not enough started members)"},
		{"the last voter", []client.Member{v(1), learner}, 1, nil, "it is the last voter (etcdserver: re-configuration failed due to not enough started members)"},
	} {
		answering := map[uint64]bool{}
		for _, id := range tt.answering {
			answering[id] = true
		}
		err := quorumAfter(tt.members, client.Member{ID: tt.dead}, answering)
		check(t, tt.name, err, tt.want)
		if err != nil && (!errors.Is(err, rpcerr.ErrNotEnoughStartedMembers) || exitCode(err) != exitQuorumProtection) {
			t.Errorf("%s: exit %d, want %d", tt.name, exitCode(err), exitQuorumProtection)
		}
	}
}

func TestMemberPruneValidate(t *testing.T) {
	for _, tt := range []struct {
		name        string
		args        []string
		unreachable time.Duration
		unstarted   time.Duration
		format      printer.Format
		want        string
	}{
		{"defaults", nil, pruneUnreachableFor, 0, printer.Simple, ""},
		{"json", nil, time.Second, time.Minute, printer.JSON, ""},
		{"zero", nil, 0, 0, printer.Simple, "--unreachable-for must be positive, not 0s"},
		{"negative unstarted", nil, time.Second, -time.Second, printer.Simple, "--unstarted-for must not be negative, not -1s"},
	} {
		o := &memberPruneOptions{Globals: globals(t, tt.format), UnreachableFor: tt.unreachable, UnstartedFor: tt.unstarted}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}
