package reconfig

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// servePeers serves every coordinator's peer calls at its peer URL (a free port, startNodes).
func servePeers(t *testing.T, coords map[uint64]*Coordinator) {
	t.Helper()
	for id, c := range coords {
		u := c.cfg.Node.Cluster().Member(membership.ID(id)).PeerURLs[0]
		serveAt(t, c, strings.TrimPrefix(u, "http://"))
	}
}

// servePeer serves c's peer calls on a loopback port of its own until the test ends, and returns
// its URL.
func servePeer(t *testing.T, c *Coordinator) string {
	return "http://" + serveAt(t, c, "127.0.0.1:0")
}

// serveAt serves c's peer calls at addr until the test ends, and returns the address served.
func serveAt(t *testing.T, c *Coordinator, addr string) string {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c.Register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// A dry run sent to a follower is answered from the leader as the real change would be: a
// refusal is the registry's own error after the hop (not text read back), with the report it
// was judged on beside it; an acceptance is the report alone.
func TestForwardedDryRun(t *testing.T) {
	_, coords := startNodes(t, "")
	servePeers(t, coords)
	lead := waitLeader(t, coords)
	var follower *Coordinator
	for id, c := range coords {
		if id != lead {
			follower = c
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	unknown := membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 0xff}}
	reply, err := follower.Do(ctx, Request{Change: unknown, DryRun: true})
	if err != rpcerr.ErrMemberNotFound || !errors.Is(err, membership.ErrIDNotFound) {
		t.Fatalf("refused dry run: error %#v", err)
	}
	if reply == nil || reply.Member.ID != 0xff || reply.Cluster.Member(membership.ID(lead)) == nil {
		t.Fatalf("refused dry run: report %+v", reply)
	}

	reply, err = follower.Do(ctx, Request{Change: learner("x", 9), DryRun: true})
	if err != nil || reply == nil || reply.Member.ID == 0 || len(reply.Cluster.Learners()) != 0 {
		t.Fatalf("accepted dry run: %+v, %v", reply, err)
	}
	// Nothing was proposed.
	if n := len(coords[lead].cfg.Node.Cluster().Members); n != 3 {
		t.Errorf("%d members after dry runs", n)
	}
}

// A joining member asks for the members alone; a member that checks whether it was removed
// asks for the removed IDs too, and how it was removed, and a member of an older version, which
// does not know the field, gets them anyway.
func TestMembershipWithoutRemoved(t *testing.T) {
	_, coords := startNodes(t, "")
	lead := coords[waitLeader(t, coords)]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	added, err := lead.Do(ctx, Request{Change: learner("x", 9)})
	if err != nil {
		t.Fatal(err)
	}
	gone := added.Member.ID
	who := membership.Origin{CN: "root", Address: "10.0.0.5:53122"}
	if _, err := lead.Do(ctx, Request{Change: membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: gone}, By: who}}); err != nil {
		t.Fatal(err)
	}
	url := servePeer(t, lead)
	info, err := FetchMembership(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Cluster.Members) != 3 || info.Cluster.IsRemoved(gone) {
		t.Errorf("%d members, %s removed: %v", len(info.Cluster.Members), gone, info.Cluster.IsRemoved(gone))
	}
	conn, err := transport.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The removed member asking about itself hears how it was removed, not who asked; about a
	// member that was not removed, nothing.
	if ev, ok := lead.cfg.Node.Cluster().History.RemovalOf(gone); !ok || ev.By != who {
		t.Fatalf("the history holds the removal as %+v, %v", ev, ok)
	}
	info, err = RemovalOn(ctx, conn, url, gone)
	if err != nil || !info.Cluster.IsRemoved(gone) || len(info.Cluster.Members) != 3 || info.Removal == nil || info.Removal.Change != "remove" || info.Removal.MemberID != gone || !info.Removal.By.IsZero() {
		t.Errorf("removal of %s: %+v, %v", gone, info, err)
	}
	if info, err := RemovalOn(ctx, conn, url, membership.ID(waitLeader(t, coords))); err != nil || info.Removal != nil {
		t.Errorf("removal of a member: %+v, %v", info, err)
	}
	// A request without the field, as a member that does not know it sends, gets them.
	a, err := pb.NewMembersClient(conn).Membership(ctx, &pb.MembershipRequest{})
	if info := wire.ClusterFromProto(a.GetCluster()); err != nil || info == nil || !info.IsRemoved(gone) {
		t.Errorf("a call without the field: %v, %s removed: %v", err, gone, info != nil && info.IsRemoved(gone))
	}
	// A member of the JSON protocol before it is not understood, and is told so.
	if err := conn.Invoke(ctx, "/clusterd.peer.v1.Members/Membership", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("a clusterd.peer.v1 call: %v, want Unimplemented", err)
	}
}

// A member of an older peer protocol answers Unimplemented, which the asking member says in
// words.
func TestFetchMembershipFromAnOlderMember(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer() // without clusterd.v2.Members
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = FetchMembership(ctx, "http://"+lis.Addr().String(), nil)
	if err == nil || !strings.Contains(err.Error(), "speaks an older peer protocol") {
		t.Fatalf("got %v, want the older-protocol error", err)
	}
}
