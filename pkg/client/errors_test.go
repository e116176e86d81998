package client

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// The answers that leave a change's fate open, etcd's variants included, and some that do not.
func TestOutcomeUnknown(t *testing.T) {
	for _, tc := range []struct {
		message string
		unknown bool
	}{
		{"etcdserver: request timed out", true},
		{"etcdserver: request timed out, possibly due to previous leader failure", true},
		{"etcdserver: request timed out, possibly due to connection lost", true},
		{"etcdserver: leader changed", true},
		{"etcdserver: no leader", false},
		{"etcdserver: server stopped", false},
		{"etcdserver: unhealthy cluster", false},
		{"etcdserver: member not found", false},
	} {
		if got := outcomeUnknown(&ServerError{Code: codes.Unavailable, Message: tc.message}); got != tc.unknown {
			t.Errorf("%q: outcome unknown %v, want %v", tc.message, got, tc.unknown)
		}
	}
}
