package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// The error depends on what happened, not on how many endpoints were given: a member that says
// it has no leader is the cause, whether the endpoints after it are down or not there at all.
func TestNoLeaderWhateverTheEndpoints(t *testing.T) {
	noLeader := &fakeServer{list: func(context.Context) error { return status.Error(codes.Unavailable, rpcerr.ErrNoLeader.Message) }}
	live := serve(t, noLeader)
	for _, eps := range [][]string{{live}, {live, deadAddr(t), deadAddr(t)}, {deadAddr(t), live, deadAddr(t)}} {
		_, err := newClient(t, eps...).MemberList(context.Background(), true)
		if !errors.Is(err, rpcerr.ErrNoLeader) || err.Error() != rpcerr.ErrNoLeader.Message {
			t.Errorf("%v: got %v, want %q", eps, err, rpcerr.ErrNoLeader.Message)
		}
		_, err = newClient(t, eps...).ListForResolve(context.Background())
		if !errors.Is(err, rpcerr.ErrNoLeader) {
			t.Errorf("%v: name lookup got %v", eps, err)
		}
	}
}

// A read is never "outcome unknown": one that times out, by the caller's deadline or by the
// member's own "request timed out", is a *TimeoutError naming every endpoint.
func TestReadTimeoutIsNotOutcomeUnknown(t *testing.T) {
	hang := &fakeServer{list: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	serverTimeout := &fakeServer{list: func(context.Context) error {
		return status.Error(codes.Unavailable, "etcdserver: request timed out")
	}}
	dead := deadAddr(t)
	for name, eps := range map[string][]string{
		"deadline":       {serve(t, hang), dead},
		"server timeout": {serve(t, serverTimeout), dead},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := newClient(t, eps...).MemberList(ctx, true)
		cancel()
		var te *TimeoutError
		if !errors.As(err, &te) || errors.As(err, new(*OutcomeUnknownError)) {
			t.Errorf("%s: got %T %v, want *TimeoutError", name, err, err)
			continue
		}
		for _, e := range eps {
			if !strings.Contains(err.Error(), e) {
				t.Errorf("%s: %q does not name %s", name, err, e)
			}
		}
		if strings.Contains(err.Error(), "check member list") {
			t.Errorf("%s: %q", name, err)
		}
	}
}

// The deadline running out while connecting is a timeout, not "cannot connect", and names every
// endpoint, also those there was no time left to try.
func TestDeadlineWhileConnectingIsTimeout(t *testing.T) {
	eps := []string{silentListener(t), silentListener(t), silentListener(t), silentListener(t), silentListener(t)}
	c, err := New(Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.MemberList(ctx, false)
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %T %v", err, err)
	}
	for _, e := range eps {
		if !strings.Contains(err.Error(), e) {
			t.Errorf("%q does not name %s", err, e)
		}
	}
}

// A member's peer port speaks gRPC without etcd's client services: say that it looks like a
// peer URL, not grpc's "unknown service".
func TestPeerPortAsEndpoint(t *testing.T) {
	peer := serveWith(t, func(*grpc.Server) {})
	_, err := newClient(t, peer).MemberList(context.Background(), false)
	var pe *PeerEndpointError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "looks like a peer URL") || !strings.Contains(err.Error(), peer) {
		t.Errorf("got %v", err)
	}
	_, err = newClient(t, peer).MemberRemove(context.Background(), 1)
	if !errors.As(err, &pe) {
		t.Errorf("change: got %v", err)
	}
}

func TestEndpointSyntax(t *testing.T) {
	for _, tc := range []struct {
		endpoint, addr string
		ok             bool
	}{
		{"127.0.0.1:2379", "127.0.0.1:2379", true},
		{"http://127.0.0.1:2379", "127.0.0.1:2379", true},
		{"http://127.0.0.1:2379/", "127.0.0.1:2379", true},
		{"https://[::1]:2379", "[::1]:2379", true},
		{"http://h:2379/x", "", false},
		{"http://h:2379/x/", "", false},
		{"h:2379/", "", false},
		{"http://h:2379?a=b", "", false},
		{"http://u@h:2379", "", false},
		{"http://:2379", "", false},
		{"http://h:0", "", false},
		{"http://h:99999", "", false},
		{"http://h:02379", "", false},
		{"http://h:p", "", false},
		{"h", "", false},
	} {
		addr, _, err := parseEndpoint(tc.endpoint, false)
		if (err == nil) != tc.ok || addr != tc.addr {
			t.Errorf("%q: %q, %v; want %q, accepted %v", tc.endpoint, addr, err, tc.addr, tc.ok)
		}
	}
}

// A member killed during the handshake closed the connection: say so, rather than that it is no
// gRPC server.
func TestHandshakeClosed(t *testing.T) {
	for _, msg := range []string{
		"connection error: desc = \"transport: authentication handshake failed: EOF\"",
		"connection error: desc = \"transport: authentication handshake failed: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer\"",
	} {
		r := failedHandshake(0, status.Error(codes.Unavailable, msg), clienttls.Dialed{Endpoint: "https://a:1", TLS: true})
		if !strings.Contains(r.reason, "connection closed") {
			t.Errorf("%s: %q", msg, r.reason)
		}
	}
	r := failedHandshake(0, status.Error(codes.Unavailable, "error reading server preface: http2: frame too large"), clienttls.Dialed{Endpoint: "a:1"})
	if r.reason != "not a gRPC server" {
		t.Errorf("HTTP/1 server: %q", r.reason)
	}
}

var _ pb.ClusterServer = (*fakeServer)(nil)
