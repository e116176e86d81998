package printer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// clusterStatus is the transcript's cluster with infra3 a learner: infra0 leads at index 42,
// infra2 trails by 3, infra1 does not answer.
func clusterStatus() *client.ClusterStatus {
	st := func(m client.Member, index uint64, errs ...string) client.MemberStatus {
		return client.MemberStatus{Member: m, Status: &client.Status{Header: header, Version: "3.7.1", RaftIndex: index, RaftTerm: 2, Errors: errs},
			Behind: 42 - index, BehindKnown: true}
	}
	return &client.ClusterStatus{
		Header: header, Leader: members[2].ID, LeaderTerm: 2,
		Members: []client.MemberStatus{
			{Member: members[0], Err: client.ErrNoClientURL},
			st(members[1], 39),
			st(members[2], 42),
			{Member: members[3], Err: errors.New("connection refused")},
		},
	}
}

// TestClusterStatusGolden prints cluster status, one cluster and --all-contexts, in every format
// its row lists (go test ./pkg/printer -update rewrites the golden files).
func TestClusterStatusGolden(t *testing.T) {
	runGolden(t, []goldenCase{
		{"cluster_status", ClusterStatus, func(p Printer, b *bytes.Buffer) error { return p.ClusterStatus(b, clusterStatus()) }},
		{"cluster_status_no_leader", ClusterStatus, func(p Printer, b *bytes.Buffer) error {
			alone := members[2]
			alone.IsLeader = false
			return p.ClusterStatus(b, &client.ClusterStatus{Header: header, Members: []client.MemberStatus{
				{Member: alone, Status: &client.Status{Header: header, Version: "3.7.1", RaftIndex: 7, Errors: []string{"etcdserver: no leader"}}},
				{Member: members[3], Err: errors.New("connection refused")},
			}})
		}},
		{"cluster_status_contexts", ClusterStatus, func(p Printer, b *bytes.Buffer) error {
			return p.ContextStatuses(b, []ContextStatus{
				{Context: "prod", Endpoints: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, Status: clusterStatus()},
				{Context: "staging", Endpoints: []string{"10.1.0.1:2379"}, Err: errors.New("context deadline exceeded")},
			})
		}},
	})
}

func TestClusterStatusQuorum(t *testing.T) {
	q := clusterStatus().Quorum()
	// infra3 is a learner; of the three voters infra1 does not answer: one more may fail.
	want := client.QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0}
	if q != want {
		t.Errorf("quorum = %+v, want %+v", q, want)
	}
}

// TestContextsGolden prints config get-contexts in every format its row lists.
func TestContextsGolden(t *testing.T) {
	runGolden(t, []goldenCase{{"config_get_contexts", ConfigContexts, func(p Printer, b *bytes.Buffer) error {
		return p.Contexts(b, []ContextRow{
			{Name: "prod", Current: true, Endpoints: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, TLS: true, User: "root"},
			{Name: "lab", Endpoints: []string{"127.0.0.1:2379"}},
		})
	}}})
}
