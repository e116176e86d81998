package server_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

func ctxWithName(name string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if name != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.MemberName, name)
	}
	return ctx, cancel
}

// addMember is phase one through c: it adds a member called name and returns it (not started),
// the answer, and the ETCD_INITIAL_CLUSTER it must start with.
func addMember(t *testing.T, c pb.ClusterClient, name string, learner bool) (*servertest.Member, *pb.MemberAddResponse, string) {
	t.Helper()
	names := namesOf(t, c)
	n := servertest.NewMember(t, name)
	ctx, cancel := ctxWithName(name)
	defer cancel()
	added, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{n.PeerURL}, IsLearner: learner})
	if err != nil {
		t.Fatal(err)
	}
	return n, added, initialOf(added, names, name)
}

func initialOf(resp *pb.MemberAddResponse, names map[uint64]string, newName string) string {
	s := ""
	for _, m := range resp.Members {
		name := names[m.ID]
		if m.ID == resp.Member.ID {
			name = newName
		}
		for _, u := range m.PeerURLs {
			if s != "" {
				s += ","
			}
			s += name + "=" + u
		}
	}
	return s
}

// namesOf reads every member's name, unstarted ones included, from the header clusterd adds.
func namesOf(t *testing.T, c pb.ClusterClient) map[uint64]string {
	t.Helper()
	var md metadata.MD
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.MemberList(ctx, &pb.MemberListRequest{Linearizable: true}, grpc.Header(&md)); err != nil {
		t.Fatal(err)
	}
	infos, err := wire.MembersFromValue(md.Get(wire.Members)[0])
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, m := range infos {
		out[uint64(m.ID)] = m.Name
	}
	return out
}

func TestBootstrapListFromEveryMember(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	for _, m := range ms {
		resp, err := servertest.List(m.Client(t), false)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.ClusterId == 0 || resp.Header.MemberId == 0 {
			t.Fatalf("header: %+v", resp.Header)
		}
		for _, pm := range resp.Members {
			if pm.IsLearner || len(pm.PeerURLs) != 1 {
				t.Fatalf("member: %+v", pm)
			}
		}
	}
}

// The whole two-phase flow: add a learner through a follower, start it from what add returned,
// promote it, remove it; the removed member stops and never starts again on its data.
func TestAddJoinPromoteRemove(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	c := ms[1].Client(t)
	n, added, initial := addMember(t, c, "m3", true)
	ctx, cancel := ctxWithName("")
	defer cancel()
	if _, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: added.Member.ID}); status.Convert(err).Message() != "etcdserver: can only promote a learner member which is in sync with leader" {
		t.Fatalf("promote before start: %v", err)
	}
	n.Start(t, n.Config(initial, "existing", nil))
	servertest.Eventually(t, 10*time.Second, func() error {
		_, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: added.Member.ID})
		return err
	})
	resp, err := servertest.List(n.Client(t), true)
	if err != nil || len(resp.Members) != 4 {
		t.Fatalf("list from the new member: %v %v", resp, err)
	}
	if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: added.Member.ID}); err != nil {
		t.Fatal(err)
	}
	if err := n.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("removed member: %v", err)
	}
	again := &servertest.Member{Name: n.Name, Dir: n.Dir, PeerURL: n.PeerURL, ClientURL: n.ClientURL}
	again.Start(t, again.Config(initial, "existing", nil))
	if err := again.Exited(t, 5*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("restart on a removed member's data: %v", err)
	}
}

// Removing the leader hands leadership over first; the rest keep answering.
// Removing the leader: it hands leadership to another voter first, so the cluster has a leader
// the moment the removal is answered rather than after an election timeout.
func TestRemoveLeader(t *testing.T) {
	// Long enough that a leaderless cluster shows: without the hand-off the others would wait
	// at least this long before electing a new leader.
	const electionTimeout = time.Second
	ms := servertest.Start(t, 3, func(c *server.Config) { c.ElectionTimeout = electionTimeout })
	resp, err := servertest.List(ms[0].Client(t), true)
	if err != nil {
		t.Fatal(err)
	}
	leader, other, lead := leaderAndOther(t, ms)
	ctx, cancel := ctxWithName("")
	defer cancel()
	if _, err := other.Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: lead}); err != nil {
		t.Fatal(err)
	}
	// A linearizable read needs a leader; half an election timeout is plenty with one.
	rctx, rcancel := context.WithTimeout(context.Background(), electionTimeout/2)
	defer rcancel()
	if _, err := other.Client(t).MemberList(rctx, &pb.MemberListRequest{Linearizable: true}); err != nil {
		t.Fatalf("no leader right after the leader's removal: %v", err)
	}
	if err := leader.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("removed leader: %v", err)
	}
	after, err := servertest.List(other.Client(t), true)
	if err != nil || len(after.Members) != len(resp.Members)-1 {
		t.Fatalf("after: %v %v", after, err)
	}
}

// leaderAndOther returns the member that leads, as ms[0] sees it, another member, and the
// leader's ID.
func leaderAndOther(t *testing.T, ms []*servertest.Member) (leader, other *servertest.Member, id uint64) {
	t.Helper()
	var md metadata.MD
	// A leader stopped a moment ago is replaced within two election timeouts; a loaded machine
	// takes longer: asked again, each try bounded, until a deadline.
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := ms[0].Client(t).MemberList(ctx, &pb.MemberListRequest{Linearizable: true}, grpc.Header(&md))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	fmt.Sscanf(md.Get(wire.Leader)[0], "%x", &id)
	for _, m := range ms {
		if r, _ := servertest.List(m.Client(t), false); r.GetHeader().GetMemberId() == id {
			leader = m
		}
	}
	for _, m := range ms {
		if m != leader {
			other = m
		}
	}
	if leader == nil {
		t.Fatalf("no member has the leader's ID %016x", id)
	}
	return leader, other, id
}

// Concurrent changes sent to different members are serialised on the leader; none times out
// and each gets its own answer.
func TestConcurrentChanges(t *testing.T) {
	ms := servertest.Start(t, 3, func(c *server.Config) { c.MaxLearners = 10 })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		// A port no member of this test binary is given: a fixed one may be a member's.
		u := "http://" + servertest.FreeAddr(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := ctxWithName(fmt.Sprintf("l%d", i))
			defer cancel()
			_, err := ms[i%3].Client(t).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{u}, IsLearner: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		servertest.WaitMembers(t, m, 9, false)
	}
}

// A member restarted on its data comes back with the same membership, without applying
// anything twice; with a small snapshot count it restarts from a snapshot plus log.
func TestRestartFromSnapshotAndLog(t *testing.T) {
	ms := servertest.Start(t, 3, func(c *server.Config) { c.SnapshotCount = 3; c.MaxLearners = 10 })
	c := ms[0].Client(t)
	for i := range 7 {
		ctx, cancel := ctxWithName(fmt.Sprintf("l%d", i))
		defer cancel()
		r, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"http://" + servertest.FreeAddr(t)}, IsLearner: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: r.Member.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, err := servertest.List(c, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		m.Start(t, m.Config("ignored=http://127.0.0.1:1", "existing", nil))
	}
	servertest.WaitMembers(t, ms[2], len(before.Members), true)
	// A member added now catches up from a snapshot: the log before it is compacted.
	n, _, initial := addMember(t, ms[1].Client(t), "late", false)
	n.Start(t, n.Config(initial, "existing", nil))
	servertest.WaitMembers(t, n, len(before.Members)+1, false)
}

// TestRemoveLeaderThroughItself removes the leader by a request to the leader itself, twice: it
// answers the removal it applied, then stops. An answer given and the stop it causes come in one
// pass of the Ready loop, and the answer must win (the removal happened): never "request timed
// out", which tells a script the outcome is unknown. The election timeout is a second: the leader
// hands off only to a voter heard within it, which a busy machine can delay past the kit's 200 ms.
func TestRemoveLeaderThroughItself(t *testing.T) {
	ms := servertest.Start(t, 4, func(c *server.Config) { c.ElectionTimeout = time.Second })
	for range 2 {
		leader, other, lead := leaderAndOther(t, ms)
		ctx, cancel := ctxWithName("")
		_, err := leader.Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: lead})
		cancel()
		if err != nil {
			t.Fatalf("removing leader %x through itself: %v", lead, err)
		}
		if err := leader.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
			t.Fatalf("removed leader: %v", err)
		}
		ms = slices.DeleteFunc(ms, func(m *servertest.Member) bool { return m == leader })
		ms = append([]*servertest.Member{other}, slices.DeleteFunc(ms, func(m *servertest.Member) bool { return m == other })...)
	}
}

// A dry run's report is about the members: it leaves out the removed IDs, as many as the
// cluster's whole history, which every dry run would otherwise carry.
func TestDryRunReportLeavesOutRemovedIDs(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	c := ms[0].Client(t)
	_, added, _ := addMember(t, c, "gone", true)
	ctx, cancel := ctxWithName("")
	defer cancel()
	if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: added.Member.ID}); err != nil {
		t.Fatal(err)
	}
	// Asked of every member: the leader's own report, and those forwarded by the others.
	for _, m := range ms {
		report, err := dryRun(t, m, membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(added.Member.ID)}})
		if err != nil || report.GetRefusal().GetMessage() != "etcdserver: member not found" {
			t.Fatalf("%s: a dry run of the removal of a removed member: %v, %v", m.Name, report, err)
		}
		if c := report.GetCluster(); len(c.GetRemoved()) != 0 || len(c.GetMembers()) == 0 {
			t.Errorf("%s: the report's cluster is %v; want the members and no removed IDs", m.Name, c)
		}
	}
}

// dryRun asks m's client port for the dry run of ch.
func dryRun(t *testing.T, m *servertest.Member, ch membership.Change) (*cpb.ChangeReply, error) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cpb.NewDryRunClient(conn).Check(ctx, wire.ChangeToProto(ch))
}
