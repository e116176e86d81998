package client

import (
	"context"
	"strings"
	"testing"
	"time"

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

// TestErrorsKeepTheScheme: every endpoint an error names is as given, https:// and http://
// kept, a trailing "/" dropped: in a ConnectError, in a TimeoutError's untried endpoints, and in
// a row of StatusOfEach.
func TestErrorsKeepTheScheme(t *testing.T) {
	dead, other := deadAddr(t), deadAddr(t)
	for _, eps := range [][]string{{"https://" + dead + "/", "https://" + other}, {"http://" + dead, "http://" + other}, {dead, other}} {
		c, err := New(Config{Endpoints: eps, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.MemberList(context.Background(), false)
		want := "no endpoint answered: " + strings.TrimSuffix(eps[0], "/") + " (connect: connection refused), " + eps[1] + " (connect: connection refused)"
		if err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %q", eps, err, want)
		}
		row := c.StatusOfEach(context.Background(), eps[1:], time.Second)[0]
		if want := "no endpoint answered: " + eps[1] + " (connect: connection refused)"; row.Err == nil || row.Err.Error() != want {
			t.Errorf("%v: status row %v, want %q", eps, row.Err, want)
		}
	}
}
