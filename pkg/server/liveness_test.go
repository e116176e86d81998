package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// wantUnhealthy fails the test unless err is etcd's refusal of a change that would leave the
// cluster without a quorum of live voters.
func wantUnhealthy(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "etcdserver: unhealthy cluster") {
		t.Fatalf("%s: %v, want etcdserver: unhealthy cluster", what, err)
	}
}

// liveOther returns the members of ms other than the stopped ones.
func liveOther(ms []*servertest.Member, stopped ...*servertest.Member) []*servertest.Member {
	var out []*servertest.Member
	for _, m := range ms {
		live := true
		for _, s := range stopped {
			live = live && m != s
		}
		if live {
			out = append(out, m)
		}
	}
	return out
}

// etcd's TestRejectUnhealthyAdd, without its wait: a voter added right after a member stopped
// would leave 2 live voters of 4, short of the quorum of 3. The stopped member's connection
// ended, and with it the leader's count of it: every live member refuses at once, the leader
// itself and a follower through its forward, and the membership is unchanged.
func TestRejectUnhealthyAddRightAfterAStop(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	leader, _, _ := leaderAndOther(t, ms)
	var follower *servertest.Member
	for _, m := range ms {
		if m != leader {
			follower = m
			break
		}
	}
	if err := follower.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, m := range liveOther(ms, follower) {
		ctx, cancel := ctxWithName("new")
		_, err := m.Client(t).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"http://127.0.0.1:1"}})
		cancel()
		wantUnhealthy(t, "a voter added through "+m.Name+" right after a member stopped", err)
	}
	r, err := servertest.List(leader.Client(t), true)
	if err != nil || len(r.Members) != 3 {
		t.Fatalf("membership after the refusals: %v %v", r, err)
	}
}

// etcd's TestRejectUnhealthyRemove, through a leader elected a moment ago: 5 voters, the leader
// and one more stopped. Removing a live member would leave 2 live voters of 4: refused at once,
// with etcd's answer, never left to the client's deadline. Removing a stopped one leaves 3 of 4:
// accepted.
func TestRejectUnhealthyRemoveThroughANewLeader(t *testing.T) {
	ms := servertest.Start(t, 5, func(c *server.Config) { c.ElectionTimeout = time.Second })
	old, other, _ := leaderAndOther(t, ms)
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	live := liveOther(ms, old, other)
	newLeader, _, _ := leaderAndOther(t, live)
	var victim *servertest.Member
	for _, m := range live {
		if m != newLeader {
			victim = m
			break
		}
	}
	victimID := memberID(t, victim)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := newLeader.Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: victimID})
	wantUnhealthy(t, "removing a live member through a new leader with 2 of 5 stopped", err)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the refusal took %v, want within 2s", took)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if _, err := newLeader.Client(t).MemberRemove(ctx2, &pb.MemberRemoveRequest{ID: memberIDOf(t, newLeader, other)}); err != nil {
		t.Fatalf("removing a stopped member (3 live voters of 4 left): %v", err)
	}
}

// memberIDOf is the ID under which live member m lists stopped member s, by its peer URL.
func memberIDOf(t *testing.T, m, s *servertest.Member) uint64 {
	t.Helper()
	r, err := servertest.List(m.Client(t), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range r.Members {
		for _, u := range x.PeerURLs {
			if u == s.PeerURL {
				return x.ID
			}
		}
	}
	t.Fatalf("%s does not list %s", m.Name, s.Name)
	return 0
}
