package api

import (
	"context"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// The server's own error variables answer with the contract's codes and messages, written out
// rather than read from the registry, so that a variable wired to the wrong entry fails here.
// pkg/rpcerr's contract test walks the registry itself.
func TestServerErrorsContract(t *testing.T) {
	for _, tc := range []struct {
		err     error
		message string
		code    codes.Code
	}{
		{membership.ErrIDNotFound, "etcdserver: member not found", codes.NotFound},
		{membership.ErrIDExists, "etcdserver: member ID already exist", codes.FailedPrecondition},
		{membership.ErrPeerURLExists, "etcdserver: Peer URLs already exists", codes.FailedPrecondition},
		{membership.ErrInvalidPeerURLs, "etcdserver: given member URLs are invalid", codes.InvalidArgument},
		{membership.ErrNotEnoughStarted, "etcdserver: re-configuration failed due to not enough started members", codes.FailedPrecondition},
		{membership.ErrUnhealthy, "etcdserver: unhealthy cluster", codes.Unavailable},
		{membership.ErrPromoteVoter, "etcdserver: can only promote a learner member", codes.FailedPrecondition},
		{membership.ErrLearnerNotReady, "etcdserver: can only promote a learner member which is in sync with leader", codes.FailedPrecondition},
		{membership.ErrTooManyLearners, "etcdserver: too many learner members in cluster", codes.FailedPrecondition},
		{membership.ErrNameExists, "etcdserver: member name already exists", codes.FailedPrecondition},
		{membership.ErrIDRemoved, "etcdserver: the member has been permanently removed from the cluster", codes.FailedPrecondition},
		{raftnode.ErrNoLeader, "etcdserver: no leader", codes.Unavailable},
		{raftnode.ErrTimeout, "etcdserver: request timed out", codes.Unavailable},
		{raftnode.ErrStopped, "etcdserver: server stopped", codes.Unavailable},
		{transport.ErrClusterIDMismatch, "etcdserver: cluster ID mismatch", codes.FailedPrecondition},
		// A proposal that ran out of time is a timeout, however it ended.
		{context.DeadlineExceeded, "etcdserver: request timed out", codes.Unavailable},
		{context.Canceled, "etcdserver: request timed out", codes.Unavailable},
	} {
		// As a handler meets them: bare, wrapped with context, and as a forwarding member gets
		// them back from the leader.
		for _, err := range []error{tc.err, fmt.Errorf("proposing: %w", tc.err), status.Error(tc.code, tc.message)} {
			st, _ := status.FromError(rpcerr.Status(err))
			if st.Code() != tc.code || st.Message() != tc.message {
				t.Errorf("%v: got %v %q, want %v %q", err, st.Code(), st.Message(), tc.code, tc.message)
			}
		}
	}
}

// A refusal reaches a real client as a status with the contract's code and message: the
// handlers answer through the registry, not through grpc's default for a plain error.
func TestRefusalOverRPC(t *testing.T) {
	lis, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	New(Config{}).Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Refused before the coordinator is asked, so the server needs no cluster.
	_, err = pb.NewClusterClient(conn).MemberAdd(context.Background(), &pb.MemberAddRequest{PeerURLs: []string{"ftp://x"}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "etcdserver: given member URLs are invalid" {
		t.Errorf("got %v %q", st.Code(), st.Message())
	}
}
