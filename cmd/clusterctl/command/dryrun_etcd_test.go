package command

import (
	"context"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
)

// etcdCluster answers like etcd: no clusterd metadata, and every change is made, dry-run
// metadata or not.
type etcdCluster struct {
	pb.UnimplementedClusterServer
	changes atomic.Int32
}

func (e *etcdCluster) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return &pb.MemberListResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: 2}, Members: []*pb.Member{
		{ID: 2, Name: "infra0", PeerURLs: []string{"http://127.0.0.1:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}},
	}}, nil
}

func (e *etcdCluster) MemberAdd(context.Context, *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	e.changes.Add(1)
	return &pb.MemberAddResponse{}, nil
}

func (e *etcdCluster) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	e.changes.Add(1)
	return &pb.MemberRemoveResponse{}, nil
}

func (e *etcdCluster) MemberUpdate(context.Context, *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	e.changes.Add(1)
	return &pb.MemberUpdateResponse{}, nil
}

func (e *etcdCluster) MemberPromote(context.Context, *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	e.changes.Add(1)
	return &pb.MemberPromoteResponse{}, nil
}

func TestDryRunAgainstEtcdChangesNothing(t *testing.T) {
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	e := &etcdCluster{}
	s := grpc.NewServer()
	pb.RegisterClusterServer(s, e)
	go s.Serve(l)
	defer s.Stop()
	ep := "--endpoints=" + l.Addr().String()
	want := "Error: --dry-run needs clusterd: the member at " + l.Addr().String() + " is not clusterd, and etcd would make the change; no change was sent\n"
	for _, args := range [][]string{
		{ep, "member", "add", "infra3", "--peer-urls=http://127.0.0.1:42380", "--dry-run"},
		{ep, "member", "remove", "infra0", "--dry-run"},
		{ep, "member", "remove", "0000000000000002", "--dry-run", "-w", "json"},
		{ep, "member", "update", "0000000000000002", "--peer-urls=http://127.0.0.1:42380", "--dry-run"},
		{ep, "member", "promote", "0000000000000002", "--dry-run"},
	} {
		stdout, stderr, code := runArgs(args...)
		if code != exitNoDryRun || stdout != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if n := e.changes.Load(); n != 0 {
		t.Errorf("%d changes sent to etcd", n)
	}
}
