package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// One forger claims a forced cluster: it holds a voter's peer address (the voter stopped), says
// that voter forced a new cluster without the two others (their removals in its history, made
// by --force-new-cluster), refuses their raft messages and notices as removed members', and
// tells them they are removed. It is one peer's word: the two are a majority of their
// membership, and the forger cannot stop or fence them. Each logs the claim with the forger's
// ID and sets clusterd_membership_forced_out, and goes on: the same leader, membership changes
// still decided, and a clean stop and start on its data (no tombstone); the real voter, back,
// finds them as it left them.
func TestForgedForcedCluster(t *testing.T) {
	c := newCluster(t, t.TempDir(), nil)
	if _, err := c.Bootstrap(3, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, cluster.BootstrapNames(3)...); err != nil {
		t.Fatal(err)
	}
	lead, _, err := c.WaitLeader(tlsWait)
	if err != nil {
		t.Fatal(err)
	}
	// The forged voter is a follower, so that the two keep their leader throughout.
	var victim *cluster.Member
	var others []*cluster.Member
	for _, m := range c.Members() {
		if m != lead && victim == nil {
			victim = m
		} else {
			others = append(others, m)
		}
	}
	cid, victimID := ids(t, victim)
	if err := c.Kill(victim.Name); err != nil {
		t.Fatal(err)
	}
	f := startForger(t, victim, others)
	for _, m := range others {
		_, id := ids(t, m)
		conn, err := transport.Dial(m.PeerURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = peerspeak.SendNotice(ctx(t), conn, peerspeak.Removed, cid, victimID, id)
		conn.Close()
		if err != nil {
			t.Fatalf("the forger's Removed notice to %s: %v", m.Name, err)
		}
	}
	for _, m := range others {
		waitLog(t, m, "says --force-new-cluster removed this member")
		waitLog(t, m, fmt.Sprintf("peer=%016x", victimID))
		waitForcedOut(t, m, 1)
	}
	// Nothing stopped, nothing fenced: the two still decide, under the same leader.
	if now, _, err := c.WaitLeader(tlsWait, namesOf(others)...); err != nil || now != lead {
		t.Fatalf("leader after the forged claim: %v, %v; want %s", now, err, lead.Name)
	}
	if out, code := clusterctl(t, "--endpoints="+cluster.Endpoints(others), "member", "add", "l1", "--learner", "--peer-urls=http://127.0.0.1:1"); code != 0 {
		t.Fatalf("a learner added after the forged claim: exit %d\n%s", code, out)
	}
	for _, m := range others {
		if err := c.Stop(m.Name, tlsWait); err != nil {
			t.Fatalf("%s: %v (want a clean stop, no tombstone)", m.Name, err)
		}
		if err := c.Restart(m.Name); err != nil {
			t.Fatal(err)
		}
	}
	// Started again, each finds the claim again: nothing was written of it.
	for _, m := range others {
		waitForcedOut(t, m, 1)
	}
	if _, _, err := c.WaitLeader(tlsWait, namesOf(others)...); err != nil {
		t.Fatal(err)
	}
	// The real voter back on its data: the three are one cluster again.
	f.Stop()
	if err := c.Restart(victim.Name); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(tlsWait, namesOf(c.Members())...); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCaughtUp(tlsWait, victim.Name); err != nil {
		t.Fatal(err)
	}
}

// startForger serves victim's peer URL as a member that forced a new cluster without others:
// asked about a removal, it answers with the membership its real peers hold, less others,
// removed by --force-new-cluster; any raft message or notice it refuses as a removed member's.
func startForger(t *testing.T, victim *cluster.Member, others []*cluster.Member) *grpc.Server {
	t.Helper()
	conn, err := transport.Dial(others[0].PeerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// With the removed IDs, as a member asked about a removal answers.
	info, err := reconfig.RemovalOn(ctx(t), conn, others[0].PeerURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	forged := info.Cluster
	for i, m := range others {
		_, id := ids(t, m)
		ch := membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(id)},
			By: membership.Origin{Clusterd: membership.OriginForceNewCluster}}
		if forged, err = forged.ApplyRecorded(ch, membership.Stamp{Index: 1<<20 + uint64(i), Term: 1 << 10}, 0); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", strings.TrimPrefix(victim.PeerURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterMembersServer(srv, &forgerMembers{c: forged})
	pb.RegisterPeerServer(srv, forgerPeer{})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return srv
}

type forgerMembers struct {
	pb.UnimplementedMembersServer
	c *membership.Cluster
}

func (f *forgerMembers) Membership(_ context.Context, req *pb.MembershipRequest) (*pb.MembershipAnswer, error) {
	a := &pb.MembershipAnswer{Cluster: wire.ClusterToProto(f.c.WithoutHistory()), Applied: 1 << 20}
	if ev, ok := f.c.History.RemovalOf(membership.ID(req.GetRemovalOf())); ok {
		a.Removal = wire.EventToProto(ev)
	}
	return a, nil
}

type forgerPeer struct{ pb.UnimplementedPeerServer }

func (forgerPeer) Raft(s pb.Peer_RaftServer) error {
	if _, err := s.Recv(); err != nil && err != io.EOF {
		return err
	}
	return rpcerr.Status(membership.ErrIDRemoved)
}

func (forgerPeer) Removed(context.Context, *pb.Notice) (*pb.Ack, error) {
	return nil, rpcerr.Status(membership.ErrIDRemoved)
}

func (forgerPeer) Hello(context.Context, *pb.Notice) (*pb.Ack, error) {
	return nil, rpcerr.Status(membership.ErrIDRemoved)
}

func (forgerPeer) Probe(context.Context, *pb.Notice) (*pb.Ack, error) {
	return nil, rpcerr.Status(membership.ErrIDRemoved)
}

// waitForcedOut waits until m's clusterd_membership_forced_out is want.
func waitForcedOut(t *testing.T, m *cluster.Member, want int) {
	t.Helper()
	line := fmt.Sprintf("clusterd_membership_forced_out %d", want)
	if err := proc.Poll(tlsWait, m.Name+"'s "+line, func() (bool, error) {
		resp, err := http.Get(m.ClientURL() + "/metrics")
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return err == nil && strings.Contains("\n"+string(b), "\n"+line+"\n"), nil
	}); err != nil {
		t.Fatal(err)
	}
}
