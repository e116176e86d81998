package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// leaderOf returns the member that the others follow, by asking each for its status.
func leaderOf(t *testing.T, ms []*servertest.Member) *servertest.Member {
	t.Helper()
	var lead *servertest.Member
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		for _, m := range ms {
			conn, err := grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
			cancel()
			conn.Close()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				lead = m
				return nil
			}
		}
		return errors.New("no leader yet")
	})
	return lead
}

// A member that is removed answers every request it holds, and every request that reaches it
// afterwards, at once: a linearizable list sent to the leader while the leader is removed either
// succeeds or fails with "server stopped" (or the connection closing), well within an election timeout,
// never after waiting for an answer that cannot come. Several removals, since the window is short.
// The election timeout is long, so that the bound (under half of it, which a held read waited)
// stays far above what a busy machine adds to an answer.
func TestRemovedLeaderLetsGo(t *testing.T) {
	const electionTimeout = 3 * time.Second
	ms := servertest.Start(t, 5, func(c *server.Config) { c.ElectionTimeout = electionTimeout })
	for round := range 2 {
		lead := leaderOf(t, ms)
		var rest []*servertest.Member
		for _, m := range ms {
			if m != lead {
				rest = append(rest, m)
			}
		}
		leadID := memberID(t, lead)
		leaderClient := lead.Client(t)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var slow []string
		var longest time.Duration
		const clientTimeout = 3 * time.Second
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
					start := time.Now()
					_, err := leaderClient.MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
					d := time.Since(start)
					cancel()
					st := status.Convert(err)
					mu.Lock()
					longest = max(longest, d)
					mu.Unlock()
					// Before the release, a read the new leader dropped waited half an
					// election timeout or more.
					bad := d > electionTimeout*2/5 ||
						err != nil && st.Code() != codes.Unavailable
					if bad {
						mu.Lock()
						slow = append(slow, d.Round(time.Millisecond).String()+": "+st.Message())
						mu.Unlock()
					}
					if err != nil && st.Message() != "etcdserver: server stopped" {
						// Gone: the connection closed or was refused.
						time.Sleep(10 * time.Millisecond)
					}
				}
			})
		}
		time.Sleep(100 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := rest[0].Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: leadID})
		cancel()
		if err != nil {
			t.Fatalf("round %d: removing the leader %s: %v", round, lead.Name, err)
		}
		if err := lead.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
			t.Errorf("round %d: removed leader's Run: %v", round, err)
		}
		time.Sleep(200 * time.Millisecond)
		close(stop)
		wg.Wait()
		t.Logf("round %d: longest request to the removed leader %v", round, longest)
		if len(slow) > 0 {
			t.Errorf("round %d: requests to the removed leader %s held or refused wrongly: %v", round, lead.Name, slow)
		}
		ms = rest
	}
}

// memberID is the member's own ID, from its status.
func memberID(t *testing.T, m *servertest.Member) uint64 {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st.Header.MemberId
}

// A voter removed while it was away, from a cluster that went on to remove and stop another of
// the voters it knew: no majority of those voters is left to confirm, but every one that answers
// does, so it stops as removed when it comes back rather than running on, refused by all.
func TestRemovedWhileAwayAfterChurn(t *testing.T) {
	ms := servertest.Start(t, 4, nil)
	c := ms[3].Client(t)
	ctx, cancel := ctxWithName("")
	defer cancel()
	ids := idsByName(t, c, ms)
	away, gone := ms[0], ms[1]
	initial := servertest.InitialCluster(ms)
	if err := away.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: ids[away.Name]}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: ids[gone.Name]}); err != nil {
		t.Fatal(err)
	}
	if err := gone.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("%s removed: %v", gone.Name, err)
	}
	exitsRemovedWhenBack(t, away, initial)
}

// A voter removed while it was away, from a cluster that then removed and stopped every voter it
// knew but one, and grew a voter it never knew: the one it knew confirms, and so does the voter
// that one's membership holds, so it stops as removed when it comes back. Only one of the voters
// it knew answers, so confirming needs the voters the cluster holds now.
func TestRemovedWhileAwayAfterTheClusterMovedOn(t *testing.T) {
	ms := servertest.Start(t, 4, nil)
	c := ms[3].Client(t)
	ids := idsByName(t, c, ms)
	away := ms[0]
	initial := servertest.InitialCluster(ms)
	if err := away.Stop(); err != nil {
		t.Fatal(err)
	}
	n, _, joinInitial := addMember(t, c, "m4", false)
	n.Start(t, n.Config(joinInitial, "existing", nil))
	servertest.WaitMembers(t, n, 5, true)
	ctx, cancel := ctxWithName("")
	defer cancel()
	for _, m := range []*servertest.Member{away, ms[1], ms[2]} {
		if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: ids[m.Name]}); err != nil {
			t.Fatalf("removing %s: %v", m.Name, err)
		}
		if m == away {
			continue
		}
		if err := m.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
			t.Fatalf("%s removed: %v", m.Name, err)
		}
	}
	exitsRemovedWhenBack(t, away, initial)
}

// idsByName waits until every member of ms has published its name, as c lists them, and returns
// their IDs by name.
func idsByName(t *testing.T, c pb.ClusterClient, ms []*servertest.Member) map[string]uint64 {
	t.Helper()
	ids := map[string]uint64{}
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		list, err := servertest.List(c, true)
		if err != nil {
			return err
		}
		for _, m := range list.Members {
			ids[m.Name] = m.ID
		}
		for _, m := range ms {
			if ids[m.Name] == 0 {
				return fmt.Errorf("members not all named yet: %v", list.Members)
			}
		}
		return nil
	})
	return ids
}

// exitsRemovedWhenBack starts away again on its data and waits for it to stop as removed.
func exitsRemovedWhenBack(t *testing.T, away *servertest.Member, initial string) {
	t.Helper()
	back := &servertest.Member{Name: away.Name, Dir: away.Dir, PeerURL: away.PeerURL, ClientURL: away.ClientURL}
	back.Start(t, back.Config(initial, "existing", nil))
	if err := back.Exited(t, 15*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("%s back on its data: %v", away.Name, err)
	}
}
