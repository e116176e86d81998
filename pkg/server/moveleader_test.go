package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
)

func maintenance(t *testing.T, m *servertest.Member) pb.MaintenanceClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewMaintenanceClient(conn)
}

// MoveLeader answers once the target leads, with etcd's refusals otherwise: sent to a
// follower, to an unknown member, to a learner, and to a member the leader no longer hears.
func TestMoveLeader(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	leader, other, leaderID := leaderAndOther(t, ms)
	r, err := servertest.List(other.Client(t), false)
	if err != nil {
		t.Fatal(err)
	}
	otherID := r.GetHeader().GetMemberId()
	move := func(m *servertest.Member, to uint64) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := maintenance(t, m).MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: to})
		return err
	}
	if got := message(move(other, leaderID)); got != "etcdserver: not leader" {
		t.Errorf("sent to a follower: %q", got)
	}
	if got := message(move(leader, 0x1234)); got != "etcdserver: bad leader transferee" {
		t.Errorf("to an unknown member: %q", got)
	}
	if err := move(leader, leaderID); err != nil {
		t.Errorf("to the leader itself: %v", err)
	}
	if err := move(leader, otherID); err != nil {
		t.Fatalf("to a voter: %v", err)
	}
	st, err := maintenance(t, other).Status(context.Background(), &pb.StatusRequest{})
	if err != nil || st.Leader != otherID {
		t.Fatalf("after the move %016x leads (%v), want %016x", st.GetLeader(), err, otherID)
	}

	_, learnerID := startLearner(t, ms, "l")
	if got := message(move(other, learnerID)); got != "etcdserver: bad leader transferee" {
		t.Errorf("to a learner: %q", got)
	}
	// The old leader stops: the new one no longer hears it within an election timeout.
	if err := leader.Stop(); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, 10*time.Second, func() error {
		if got := message(move(other, leaderID)); got != "etcdserver: bad leader transferee" {
			return &refusal{got}
		}
		return nil
	})
}

type refusal struct{ got string }

func (r *refusal) Error() string { return "to a stopped member: " + r.got }

// Leadership moved to a member promoted a moment ago goes at once, round after round: the
// leader asks the member whether it has applied its promotion before raft's transfer, whose
// invitation to campaign a member that is still a learner drops. The election timeout is long,
// so that a dropped invitation, which raft asks again only after one, shows.
func TestMoveLeaderRightAfterAPromotion(t *testing.T) {
	const electionTimeout = 5 * time.Second
	ms := servertest.Start(t, 3, func(c *server.Config) { c.ElectionTimeout = electionTimeout })
	for round := range 3 {
		leader, _, _ := leaderAndOther(t, ms)
		m, id := startLearner(t, ms, fmt.Sprintf("l%d", round))
		servertest.Eventually(t, 10*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := leader.Client(t).MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
			return err
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*electionTimeout)
		start := time.Now()
		_, err := maintenance(t, leader).MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: id})
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("round %d: moving leadership to the member just promoted: %v", round, err)
		}
		if took >= electionTimeout/2 {
			t.Errorf("round %d: the move took %v: the invitation was dropped and asked again", round, took)
		}
		ms = append(ms, m)
	}
}
