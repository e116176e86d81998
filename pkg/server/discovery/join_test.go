package discovery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestFailedWordsPermissionDenied: etcd's permission denied on a request is a *PermissionError
// that names the user, never the password given with it, and the prefix to grant.
func TestFailedWordsPermissionDenied(t *testing.T) {
	for _, tt := range []struct {
		user, password, who string
	}{
		{"alice:secret", "", `user "alice"`},
		{"alice", "secret", `user "alice"`},
		{"", "", "the client certificate's user (its CN)"},
	} {
		m := &member{cfg: Config{Token: "tok", Endpoints: []string{"10.0.0.9:2379"}, User: tt.user, Password: tt.password}}
		err := m.failed(context.Background(), rpctypes.ErrGRPCPermissionDenied, time.Second)
		var denied *PermissionError
		if !errors.As(err, &denied) || !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("%q: %#v", tt.user, err)
		}
		want := "discovery: the discovery service at 10.0.0.9:2379 refused " + tt.who +
			` the keys of discovery token "tok" (etcdserver: permission denied); nothing was registered: give the user a role with readwrite on the keys with prefix /_etcd/registry/tok/`
		if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "secret") {
			t.Errorf("%q: %s", tt.user, msg)
		}
	}
}
