package client

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

func answer(ep string, cluster, member, leader, term uint64) EndpointStatus {
	return EndpointStatus{Endpoint: ep, Status: &Status{Header: Header{ClusterID: cluster, MemberID: member}, Leader: leader, RaftTerm: term}}
}

// TestSplitOf: groups under one cluster are apart only on proof; a member that has not heard of
// the new leader yet is no split.
func TestSplitOf(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answers []EndpointStatus
		lists   map[uint64][]uint64 // by leader
		want    string
	}{
		{"one cluster", []EndpointStatus{answer("a", 9, 1, 1, 4), answer("b", 9, 2, 1, 4), {Endpoint: "c", Err: rpcerr.ErrNoLeader}}, nil, ""},
		{"a member behind the new leader", []EndpointStatus{answer("a", 9, 1, 2, 5), answer("b", 9, 2, 2, 5), answer("c", 9, 3, 1, 4)},
			map[uint64][]uint64{1: {1, 2, 3}, 2: {1, 2, 3}}, ""},
		{"a member without a leader", []EndpointStatus{answer("a", 9, 1, 1, 4), answer("b", 9, 2, 0, 5)}, nil, ""},
		{"two cluster IDs", []EndpointStatus{answer("a", 9, 1, 1, 4), answer("b", 8, 2, 2, 7)}, nil, "cluster IDs 0000000000000009 and 0000000000000008"},
		{"two leaders in one term", []EndpointStatus{answer("a", 9, 1, 1, 4), answer("b", 9, 2, 1, 4), answer("c", 9, 3, 3, 4), answer("d", 9, 4, 3, 4)},
			nil, "two leaders in term 4"},
		// after a force-new-cluster: 3 forced and grown by 4; 1 and 2 restarted on old data
		{"each lacks the other's members", []EndpointStatus{answer("a", 9, 1, 1, 6), answer("b", 9, 2, 1, 6), answer("c", 9, 3, 3, 3), answer("d", 9, 4, 3, 3)},
			map[uint64][]uint64{1: {1, 2, 3}, 3: {3, 4}}, "each group has members the other's membership lacks"},
		{"memberships unread", []EndpointStatus{answer("a", 9, 1, 1, 6), answer("c", 9, 3, 3, 3)}, nil, ""},
	} {
		gs := Groups(tt.answers)
		for i := range gs {
			gs[i].Membership = tt.lists[gs[i].Leader]
		}
		got := SplitOf(gs)
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%s: split %v", tt.name, got)
		case tt.want != "" && got == nil:
			t.Errorf("%s: no split, want %q", tt.name, tt.want)
		case got != nil && got.Why != tt.want:
			t.Errorf("%s: why %q, want %q", tt.name, got.Why, tt.want)
		case got != nil && len(got.Groups) < 2:
			t.Errorf("%s: %d groups", tt.name, len(got.Groups))
		}
	}
}

func TestSplitErrorNamesEveryGroup(t *testing.T) {
	e := SplitOf([]Group{{ClusterID: 9, Leader: 1, Term: 6, Members: []uint64{1, 2}, Membership: []uint64{1, 2, 3}},
		{ClusterID: 9, Leader: 3, Term: 6, Members: []uint64{3, 4}}})
	want := "split: 2 groups answer, each on its own (two leaders in term 6): " +
		"cluster 0000000000000009 led by 0000000000000001 at term 6: 0000000000000001,0000000000000002 (members 0000000000000001,0000000000000002,0000000000000003); " +
		"cluster 0000000000000009 led by 0000000000000003 at term 6: 0000000000000003,0000000000000004"
	if e == nil || e.Error() != want || strings.Contains(e.Error(), "\n") {
		t.Errorf("got %v\nwant %s", e, want)
	}
}
