package metrics

import (
	"testing"
	"time"
)

func TestStateGaugesReadAtScrape(t *testing.T) {
	clock := time.Unix(1000, 0)
	m := New(Options{NoProcessCollector: true, Now: func() time.Time { return clock }})

	// Before the node exists: no leader, no ID, every members series at zero.
	_, fams := scrape(t, m)
	wantValue(t, fams, 0, "etcd_server_has_leader")
	wantValue(t, fams, 0, "etcd_server_is_leader")
	if _, ok := fams["etcd_server_id"]; ok {
		t.Error("etcd_server_id before the member knows its ID")
	}
	for _, role := range []string{"voter", "learner"} {
		for _, state := range []string{"started", "unstarted"} {
			wantValue(t, fams, 0, "clusterd_membership_members", role, state)
		}
	}

	s := State{
		ID: 0x1, Leader: 0x1, Committed: 42, Applied: 41,
		Members: []Member{
			{ID: 0x1, Started: true}, {ID: 0x2, Started: true}, {ID: 0x3},
			{ID: 0x4, Learner: true, Started: true}, {ID: 0x5, Learner: true},
		},
		Match:  map[uint64]uint64{0x1: 42, 0x2: 42, 0x3: 0, 0x4: 40, 0x5: 0},
		Active: map[uint64]bool{0x2: true, 0x3: false, 0x4: true, 0x5: false},
	}
	m.ReadStateFrom(func() State { return s })
	_, fams = scrape(t, m)
	wantValue(t, fams, 1, "etcd_server_has_leader")
	wantValue(t, fams, 1, "etcd_server_is_leader")
	wantValue(t, fams, 0, "etcd_server_is_learner")
	wantValue(t, fams, 1, "etcd_server_id", "0000000000000001")
	wantValue(t, fams, 42, "etcd_server_proposals_committed_total")
	wantValue(t, fams, 41, "etcd_server_proposals_applied_total")
	wantValue(t, fams, 2, "clusterd_membership_members", "voter", "started")
	wantValue(t, fams, 1, "clusterd_membership_members", "voter", "unstarted")
	wantValue(t, fams, 1, "clusterd_membership_members", "learner", "started")
	wantValue(t, fams, 1, "clusterd_membership_members", "learner", "unstarted")
	wantValue(t, fams, 2, "clusterd_membership_learner_lag_entries", "0000000000000004")
	wantValue(t, fams, 42, "clusterd_membership_learner_lag_entries", "0000000000000005")
	if _, ok := value(fams, "clusterd_membership_learner_lag_entries", "0000000000000002"); ok {
		t.Error("a voter has a learner lag")
	}
	wantValue(t, fams, 0, "clusterd_membership_member_unstarted_seconds", "0000000000000003")
	wantValue(t, fams, 0, "clusterd_membership_member_unstarted_seconds", "0000000000000005")
	// Every other member, live or not, under etcd's labels: Local is this member.
	wantValue(t, fams, 1, "etcd_network_active_peers", "0000000000000001", "0000000000000002")
	wantValue(t, fams, 0, "etcd_network_active_peers", "0000000000000001", "0000000000000003")
	wantValue(t, fams, 1, "etcd_network_active_peers", "0000000000000001", "0000000000000004")

	// Ten minutes on, 0x3 has started and 0x5 has not; a follower's view: no lag reported.
	clock = clock.Add(10 * time.Minute)
	s.Members[2].Started = true
	s.Leader, s.Match, s.Learner = 0x2, nil, false
	_, fams = scrape(t, m)
	wantValue(t, fams, 1, "etcd_server_has_leader")
	wantValue(t, fams, 0, "etcd_server_is_leader")
	if _, ok := fams["clusterd_membership_learner_lag_entries"]; ok {
		t.Error("learner lag reported by a member that is not the leader")
	}
	if _, ok := value(fams, "clusterd_membership_member_unstarted_seconds", "0000000000000003"); ok {
		t.Error("a started member still has an unstarted duration")
	}
	wantValue(t, fams, 600, "clusterd_membership_member_unstarted_seconds", "0000000000000005")

	// 0x5 is removed: its clock is forgotten, so an ID that came back (it never does) would
	// start from zero rather than inherit a stale duration.
	s.Members = s.Members[:4]
	scrape(t, m)
	s.Members = append(s.Members, Member{ID: 0x5, Learner: true})
	clock = clock.Add(time.Minute)
	_, fams = scrape(t, m)
	wantValue(t, fams, 0, "clusterd_membership_member_unstarted_seconds", "0000000000000005")

	// A learner's own view.
	s = State{ID: 0x4, Leader: 0x1, Learner: true}
	_, fams = scrape(t, m)
	wantValue(t, fams, 1, "etcd_server_is_learner")

	// A joining member that does not know its ID: no Local to name, no series.
	s = State{Active: map[uint64]bool{0x1: true}}
	if _, fams = scrape(t, m); fams["etcd_network_active_peers"] != nil {
		t.Error("active peers reported without an ID")
	}
}

// TestLearnerAheadOfLeaderMatch: raft's match of a follower can pass the leader's own for a
// moment (the leader's append is counted at Advance); the lag is then 0, never a wrapped
// uint64.
func TestLearnerAheadOfLeaderMatch(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	m.ReadStateFrom(func() State {
		return State{ID: 1, Leader: 1, Members: []Member{{ID: 1}, {ID: 2, Learner: true}},
			Match: map[uint64]uint64{1: 10, 2: 11}}
	})
	_, fams := scrape(t, m)
	wantValue(t, fams, 0, "clusterd_membership_learner_lag_entries", "0000000000000002")
}
