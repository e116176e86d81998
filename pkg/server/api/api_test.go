package api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// The contract's table of RPC errors, written out rather than read from errorCodes, so that a
// changed code or message fails here. etcd's clients match these texts exactly.
func TestToStatusContract(t *testing.T) {
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
		{raftnode.ErrNoLeader, "etcdserver: no leader", codes.Unavailable},
		{raftnode.ErrTimeout, "etcdserver: request timed out", codes.Unavailable},
		{transport.ErrClusterIDMismatch, "etcdserver: cluster ID mismatch", codes.FailedPrecondition},
		{raftnode.ErrStopped, "etcdserver: server stopped", codes.Unavailable},
		// A proposal that ran out of time is a timeout, however it ended.
		{context.DeadlineExceeded, "etcdserver: request timed out", codes.Unavailable},
		{context.Canceled, "etcdserver: request timed out", codes.Unavailable},
	} {
		// As a handler meets them: bare, wrapped with context, and as a forwarding member gets
		// them back from the leader.
		for _, err := range []error{tc.err, fmt.Errorf("proposing: %w", tc.err), status.Error(tc.code, tc.message)} {
			st, _ := status.FromError(toStatus(err))
			if st.Code() != tc.code || st.Message() != tc.message {
				t.Errorf("%v: got %v %q, want %v %q", err, st.Code(), st.Message(), tc.code, tc.message)
			}
		}
	}
	if err := toStatus(nil); err != nil {
		t.Errorf("nil: got %v", err)
	}
	// Anything else keeps its text, as etcd's Unknown does.
	st, _ := status.FromError(toStatus(errors.New("disk full")))
	if st.Code() != codes.Unknown || st.Message() != "disk full" {
		t.Errorf("other error: got %v %q", st.Code(), st.Message())
	}
}
