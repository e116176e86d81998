package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The contract: every message and code clusterd answers with, written out rather than read from
// the registry, so that a changed code or message fails here. etcd's clients match these texts
// exactly. TestRegistryIsTheContract checks both ways: every entry is here, every row is an entry.
var contract = []struct {
	err     *Error
	message string
	code    codes.Code
}{
	// RPC errors.
	{ErrMemberNotFound, "etcdserver: member not found", codes.NotFound},
	{ErrMemberIDExists, "etcdserver: member ID already exist", codes.FailedPrecondition},
	{ErrPeerURLExists, "etcdserver: Peer URLs already exists", codes.FailedPrecondition},
	{ErrInvalidPeerURLs, "etcdserver: given member URLs are invalid", codes.InvalidArgument},
	{ErrNotEnoughStartedMembers, "etcdserver: re-configuration failed due to not enough started members", codes.FailedPrecondition},
	{ErrUnhealthyCluster, "etcdserver: unhealthy cluster", codes.Unavailable},
	{ErrMemberNotLearner, "etcdserver: can only promote a learner member", codes.FailedPrecondition},
	{ErrLearnerNotReady, "etcdserver: can only promote a learner member which is in sync with leader", codes.FailedPrecondition},
	{ErrTooManyLearners, "etcdserver: too many learner members in cluster", codes.FailedPrecondition},
	{ErrNoLeader, "etcdserver: no leader", codes.Unavailable},
	{ErrTimeout, "etcdserver: request timed out", codes.Unavailable},
	{ErrClusterIDMismatch, "etcdserver: cluster ID mismatch", codes.FailedPrecondition},
	{ErrStopped, "etcdserver: server stopped", codes.Unavailable},
	// Auth and leadership.
	{ErrPermissionDenied, "etcdserver: permission denied", codes.PermissionDenied},
	{ErrAuthFailed, "etcdserver: authentication failed, invalid user ID or password", codes.InvalidArgument},
	{ErrUserEmpty, "etcdserver: user name is empty", codes.InvalidArgument},
	{ErrUserNotFound, "etcdserver: user name not found", codes.FailedPrecondition},
	{ErrInvalidAuthToken, "etcdserver: invalid auth token", codes.Unauthenticated},
	{ErrBadLeaderTransferee, "etcdserver: bad leader transferee", codes.FailedPrecondition},
	{ErrNotLeader, "etcdserver: not leader", codes.FailedPrecondition},
	{ErrLeaderTransferTimedOut, "etcdserver: request timed out, leader transfer took too long", codes.Unavailable},
	// etcd's, not in clusterd's answers: a proposal's fate is open (the client's outcome unknown).
	{ErrLeaderChanged, "etcdserver: leader changed", codes.Unavailable},
	// clusterd's own.
	{ErrMemberNameExists, "etcdserver: member name already exists", codes.FailedPrecondition},
	{ErrMemberRemoved, "etcdserver: the member has been permanently removed from the cluster", codes.FailedPrecondition},
	{ErrProposalLost, "etcdserver: proposal lost, retry", codes.Unavailable},
	{ErrWrongMember, "etcdserver: message for another member", codes.FailedPrecondition},
	{ErrInvalidMemberName, "etcdserver: member name is invalid", codes.InvalidArgument},
	{ErrPeerURLIsClientURL, "etcdserver: peer URL is already a member's client URL", codes.FailedPrecondition},
	{ErrNoKeys, "etcdserver: clusterd keeps no keys: it serves etcd's membership API, and of the KV service only the read of \"health\" that etcdctl endpoint health makes", codes.Unimplemented},
}

func TestRegistryIsTheContract(t *testing.T) {
	inContract := map[*Error]bool{}
	for _, tc := range contract {
		inContract[tc.err] = true
		if tc.err.Message != tc.message || tc.err.Code != tc.code {
			t.Errorf("%q: registered as %v %q, want %v %q", tc.message, tc.err.Code, tc.err.Message, tc.code, tc.message)
		}
		if Lookup(tc.message) != tc.err {
			t.Errorf("%q: Lookup gives %v", tc.message, Lookup(tc.message))
		}
	}
	for e := range maps.Values(byMessage) {
		if !inContract[e] {
			t.Errorf("%v %q is registered but not in the contract", e.Code, e.Message)
		}
	}
	if len(byMessage) != len(contract) {
		t.Errorf("%d entries registered, %d in the contract", len(byMessage), len(contract))
	}
}

// Every entry survives the trip between members (and from a server to a client): sent with
// Status, bare or wrapped as a handler meets it, and read back with FromStatus, it is the
// registry's own value. A status carrying the message with another code, as etcd sends "not
// enough started members", is the same error.
func TestStatusRoundTrip(t *testing.T) {
	for e := range maps.Values(byMessage) {
		for _, err := range []error{e, fmt.Errorf("proposing: %w", e), status.Error(codes.Unknown, e.Message)} {
			sent := Status(err)
			st, _ := status.FromError(sent)
			if st.Code() != e.Code || st.Message() != e.Message {
				t.Errorf("%v: sent as %v %q, want %v %q", err, st.Code(), st.Message(), e.Code, e.Message)
			}
			if back := FromStatus(sent); back != e || !errors.Is(back, e) {
				t.Errorf("%v: read back as %#v", err, back)
			}
		}
		if !errors.Is(&Error{Code: codes.Unknown, Message: e.Message}, e) {
			t.Errorf("%q: another code does not match by message", e.Message)
		}
	}
}

func TestStatusOfOtherErrors(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    codes.Code
		message string
	}{
		// A proposal that ran out of time is a timeout, however it ended.
		{context.DeadlineExceeded, codes.Unavailable, "etcdserver: request timed out"},
		{fmt.Errorf("waiting: %w", context.Canceled), codes.Unavailable, "etcdserver: request timed out"},
		// Anything else keeps its text, as etcd's Unknown does.
		{errors.New("disk full"), codes.Unknown, "disk full"},
		// A peer's status that the registry does not know passes through as it came.
		{status.Error(codes.ResourceExhausted, "too big"), codes.ResourceExhausted, "too big"},
	} {
		st, _ := status.FromError(Status(tc.err))
		if st.Code() != tc.code || st.Message() != tc.message {
			t.Errorf("%v: got %v %q, want %v %q", tc.err, st.Code(), st.Message(), tc.code, tc.message)
		}
	}
	if Status(nil) != nil {
		t.Error("nil: not nil")
	}
	other := status.Error(codes.Unavailable, "connection error: refused")
	if FromStatus(other) != other {
		t.Error("an unknown status is not left to the caller")
	}
	plain := errors.New("plain")
	if FromStatus(plain) != plain {
		t.Error("an error without a status is not returned unchanged")
	}
}
