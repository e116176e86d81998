package client

import (
	"errors"
	"testing"
)

// TestClusterStatusFigures: the quorum and fault tolerance of what one call saw, and the leader
// taken from the highest term among the answers.
func TestClusterStatusFigures(t *testing.T) {
	answer := func(id, leader, term, index uint64) *Status {
		return &Status{Header: Header{ClusterID: 9, MemberID: id}, Leader: leader, RaftTerm: term, RaftIndex: index}
	}
	down := errors.New("connection refused")
	voter := func(id uint64, st *Status) MemberStatus {
		m := MemberStatus{Member: Member{ID: id, Started: true}, Status: st}
		if st == nil {
			m.Err = down
		}
		return m
	}
	for _, tt := range []struct {
		name                  string
		members               []MemberStatus
		live, ft              int
		leader, term, behind3 uint64
		healthy               bool
	}{
		{"three up", []MemberStatus{voter(1, answer(1, 1, 2, 10)), voter(2, answer(2, 1, 2, 10)), voter(3, answer(3, 1, 2, 7))}, 3, 1, 1, 2, 3, true},
		{"one down", []MemberStatus{voter(1, answer(1, 1, 2, 10)), voter(2, nil), voter(3, answer(3, 1, 2, 10))}, 2, 0, 1, 2, 0, false},
		{"a stale leader in an older term", []MemberStatus{voter(1, answer(1, 1, 2, 10)), voter(2, answer(2, 2, 3, 12)), voter(3, answer(3, 2, 3, 11))}, 3, 1, 2, 3, 1, true},
		{"no leader", []MemberStatus{voter(1, answer(1, 0, 2, 10)), voter(2, nil), voter(3, nil)}, 1, -1, 0, 0, 0, false},
		{"a learner and an unstarted voter", []MemberStatus{
			voter(1, answer(1, 1, 2, 10)), voter(2, answer(2, 1, 2, 10)), voter(3, answer(3, 1, 2, 4)),
			{Member: Member{ID: 4, IsLearner: true, Started: true}, Status: answer(4, 1, 2, 9)},
			{Member: Member{ID: 5}, Err: ErrNoClientURL},
		}, 3, 0, 1, 2, 6, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &ClusterStatus{Members: tt.members}
			s.settleLeader()
			q := s.Quorum()
			if q.ConnectedVoters != tt.live || q.FaultTolerance != tt.ft || s.Leader != tt.leader || s.LeaderTerm != tt.term || s.Healthy() != tt.healthy {
				t.Errorf("live %d, fault tolerance %d, leader %d in term %d, healthy %v; want %d, %d, %d, %d, %v",
					q.ConnectedVoters, q.FaultTolerance, s.Leader, s.LeaderTerm, s.Healthy(), tt.live, tt.ft, tt.leader, tt.term, tt.healthy)
			}
			if m := s.Members[2]; m.Status != nil && tt.leader != 0 && (!m.BehindKnown || m.Behind != tt.behind3) {
				t.Errorf("member 3 behind %d (known %v), want %d", m.Behind, m.BehindKnown, tt.behind3)
			}
			for _, m := range s.Members {
				if m.IsLeader != (m.ID == tt.leader) {
					t.Errorf("member %d: IsLeader %v", m.ID, m.IsLeader)
				}
			}
		})
	}
}
