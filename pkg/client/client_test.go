package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// fakeServer answers like etcd (no metadata) or like clusterd (with metadata), from the
// transcript's members. Its handlers can be replaced per test.
type fakeServer struct {
	pb.UnimplementedClusterServer
	pb.UnimplementedMaintenanceServer
	clusterd bool
	noLeader atomic.Bool // its status names no leader
	calls    atomic.Int32
	list     func(context.Context) error
	remove   func(context.Context) error
	addName  atomic.Value // the clusterd-member-name metadata of the last MemberAdd
}

// membersValue is clusterd's clusterd-members-bin metadata listing ms.
func membersValue(ms ...membership.Member) string {
	list := make([]*membership.Member, len(ms))
	for i := range ms {
		list[i] = &ms[i]
	}
	return wire.MembersValue(membership.NewCluster(1, list))
}

func (f *fakeServer) header(ctx context.Context) {
	if f.clusterd {
		grpc.SetHeader(ctx, metadata.Pairs(
			wire.Members, membersValue(membership.Member{ID: 0x96dbf27657837fe1, Name: "infra3"}, membership.Member{ID: 0x77f41cbd71028a3a, Name: "infra0", Started: true}),
			wire.Leader, "77f41cbd71028a3a"))
	}
}

func (f *fakeServer) MemberList(ctx context.Context, _ *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	f.calls.Add(1)
	if f.list != nil {
		if err := f.list(ctx); err != nil {
			return nil, err
		}
	}
	f.header(ctx)
	return &pb.MemberListResponse{Header: pbHeader, Members: pbMembers}, nil
}

func (f *fakeServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	f.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	f.addName.Store(strings.Join(md.Get(wire.MemberName), ","))
	f.header(ctx)
	m := &pb.Member{ID: 0x96dbf27657837fe1, PeerURLs: r.PeerURLs, IsLearner: r.IsLearner}
	return &pb.MemberAddResponse{Header: pbHeader, Member: m, Members: []*pb.Member{m, pbMembers[1]}}, nil
}

func (f *fakeServer) MemberRemove(ctx context.Context, _ *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	f.calls.Add(1)
	if err := f.remove(ctx); err != nil {
		return nil, err
	}
	return &pb.MemberRemoveResponse{Header: pbHeader, Members: pbMembers[1:]}, nil
}

func (f *fakeServer) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	if f.noLeader.Load() {
		return &pb.StatusResponse{Header: pbHeader}, nil
	}
	return &pb.StatusResponse{Header: pbHeader, Leader: 0x77f41cbd71028a3a}, nil
}

func (f *fakeServer) MoveLeader(context.Context, *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	f.calls.Add(1)
	return &pb.MoveLeaderResponse{Header: pbHeader}, nil
}

// serve starts f on a free loopback port for the test's lifetime and returns its address.
func serve(t *testing.T, f *fakeServer) string {
	return serveWith(t, func(s *grpc.Server) {
		pb.RegisterClusterServer(s, f)
		pb.RegisterMaintenanceServer(s, f)
	})
}

// serveWith starts a gRPC server with the services register adds, on a free loopback port for
// the test's lifetime, and returns its address.
func serveWith(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func newClient(t *testing.T, endpoints ...string) *Client {
	t.Helper()
	c, err := New(Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestMemberListLikeEtcd(t *testing.T) {
	c := newClient(t, serve(t, &fakeServer{}))
	r, err := c.MemberList(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{
		{ID: 0x96dbf27657837fe1, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		{ID: 0x77f41cbd71028a3a, Name: "infra0", Started: true, PeerURLs: wantMembers[1].PeerURLs, ClientURLs: wantMembers[1].ClientURLs, IsLeader: true},
	}
	if r.Header != wantHeader || !reflect.DeepEqual(r.Members, want) {
		t.Errorf("got %+v", r)
	}
}

func TestMemberListLikeClusterd(t *testing.T) {
	c := newClient(t, serve(t, &fakeServer{clusterd: true}))
	r, err := c.MemberList(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Members[0]; m.Name != "infra3" || m.Started || m.IsLeader {
		t.Errorf("unstarted member from metadata: got %+v", m)
	}
	if m := r.Members[1]; m.Name != "infra0" || !m.Started || !m.IsLeader {
		t.Errorf("leader from metadata: got %+v", m)
	}
}

func TestDeadEndpointIsSkipped(t *testing.T) {
	c := newClient(t, deadAddr(t), serve(t, &fakeServer{}))
	if _, err := c.MemberList(context.Background(), true); err != nil {
		t.Fatal(err)
	}
}

func TestNoEndpointAnswers(t *testing.T) {
	a, b := deadAddr(t), deadAddr(t)
	c := newClient(t, a, b)
	_, err := c.MemberList(context.Background(), true)
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *ConnectError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, a+" (") || !strings.Contains(msg, b+" (") || !strings.Contains(msg, "refused") {
		t.Errorf("message %q does not name both endpoints and why", msg)
	}
}

func TestSilentEndpointFailsWithinDialTimeout(t *testing.T) {
	// A listener that never accepts completes TCP handshakes (the backlog) but never speaks
	// HTTP/2, so the endpoint is reachable yet silent.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := New(Config{Endpoints: []string{l.Addr().String()}, DialTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.MemberList(context.Background(), true)
	var ce *ConnectError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s with a 300ms dial timeout", d)
	}
}

// silentListener is a loopback address that accepts connections and never writes to them: a
// TCP peer that never speaks HTTP/2, as a hung process or a server that is not gRPC would be.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestTwoSilentEndpoints: both endpoints accept and never answer. The call fails once the dial
// timeout is over, not later, and the error names both endpoints with why each failed, also
// when the dial timeout is shorter than the delay before the next endpoint is tried.
func TestTwoSilentEndpoints(t *testing.T) {
	for _, timeout := range []time.Duration{200 * time.Millisecond, time.Second} {
		t.Run(timeout.String(), func(t *testing.T) {
			a, b := silentListener(t), silentListener(t)
			c, err := New(Config{Endpoints: []string{a, b}, DialTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			_, err = c.MemberList(context.Background(), true)
			elapsed := time.Since(start)
			var ce *ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConnectError", err)
			}
			want := fmt.Sprintf("no endpoint answered: %s (no answer within %s), %s (no answer within %s)", a, timeout, b, timeout)
			if err.Error() != want {
				t.Errorf("got  %q\nwant %q", err, want)
			}
			// Generous: only a wait well past the dial timeout is wrong.
			if elapsed > timeout+2*time.Second {
				t.Errorf("took %s with a %s dial timeout", elapsed, timeout)
			}
		})
	}
}

// TestSilentEndpointIsSkipped: a live endpoint after a silent one answers, within the dial
// timeout, reads and changes alike.
func TestSilentEndpointIsSkipped(t *testing.T) {
	for _, timeout := range []time.Duration{200 * time.Millisecond, time.Second} {
		t.Run(timeout.String(), func(t *testing.T) {
			f := &fakeServer{}
			c, err := New(Config{Endpoints: []string{silentListener(t), serve(t, f)}, DialTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.MemberList(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if _, err := c.MemberAdd(context.Background(), "infra3", []string{"http://127.0.0.1:42380"}, true); err != nil {
				t.Fatal(err)
			}
			if n := f.calls.Load(); n != 2 {
				t.Errorf("the live endpoint answered %d requests, want 2", n)
			}
		})
	}
}

// TestDeadThenLiveEndpointChange: a change, which is never sent twice, still goes to a live
// endpoint after a refused one, since nothing was sent to the refused one.
func TestDeadThenLiveEndpointChange(t *testing.T) {
	f := &fakeServer{}
	c := newClient(t, deadAddr(t), serve(t, f))
	if _, err := c.MemberAdd(context.Background(), "infra3", []string{"http://127.0.0.1:42380"}, true); err != nil {
		t.Fatal(err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("the live endpoint answered %d requests, want 1", n)
	}
}

func TestReadMovesOnWhenUnavailable(t *testing.T) {
	first := &fakeServer{list: func(context.Context) error { return status.Error(codes.Unavailable, rpcerr.ErrNoLeader.Message) }}
	second := &fakeServer{}
	c := newClient(t, serve(t, first), serve(t, second))
	if _, err := c.MemberList(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if first.calls.Load() != 1 || second.calls.Load() != 1 {
		t.Errorf("calls: first %d, second %d", first.calls.Load(), second.calls.Load())
	}
}

func TestLastMembersAnswerIsKept(t *testing.T) {
	noLeader := func(context.Context) error { return status.Error(codes.Unavailable, rpcerr.ErrNoLeader.Message) }
	c := newClient(t, serve(t, &fakeServer{list: noLeader}), serve(t, &fakeServer{list: noLeader}))
	if _, err := c.MemberList(context.Background(), true); !errors.Is(err, rpcerr.ErrNoLeader) {
		t.Errorf("got %v, want rpcerr.ErrNoLeader", err)
	}
}

func TestChangeIsNotRetriedOnceSent(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	first := &fakeServer{remove: hang}
	second := &fakeServer{remove: hang}
	c := newClient(t, serve(t, first), serve(t, second))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.MemberRemove(ctx, 1)
	var ou *OutcomeUnknownError
	if !errors.As(err, &ou) {
		t.Fatalf("got %v, want *OutcomeUnknownError", err)
	}
	if first.calls.Load() != 1 || second.calls.Load() != 0 {
		t.Errorf("calls: first %d, second %d; want the change sent once, to the first", first.calls.Load(), second.calls.Load())
	}
}

func TestServerTimeoutIsOutcomeUnknown(t *testing.T) {
	f := &fakeServer{remove: func(context.Context) error {
		return status.Error(codes.Unavailable, "etcdserver: request timed out, possibly due to previous leader failure")
	}}
	_, err := newClient(t, serve(t, f)).MemberRemove(context.Background(), 1)
	var ou *OutcomeUnknownError
	if !errors.As(err, &ou) || err.Error() != "etcdserver: request timed out, possibly due to previous leader failure" {
		t.Errorf("got %v", err)
	}
}

func TestServerRefusalKeepsItsMessage(t *testing.T) {
	// etcd sends this one with code Unknown; the message decides.
	f := &fakeServer{remove: func(context.Context) error {
		return status.Error(codes.Unknown, rpcerr.ErrNotEnoughStartedMembers.Message)
	}}
	_, err := newClient(t, serve(t, f)).MemberRemove(context.Background(), 1)
	if !errors.Is(err, rpcerr.ErrNotEnoughStartedMembers) || err.Error() != rpcerr.ErrNotEnoughStartedMembers.Message {
		t.Errorf("got %v", err)
	}
}

func TestMemberAddSendsName(t *testing.T) {
	f := &fakeServer{}
	r, err := newClient(t, serve(t, f)).MemberAdd(context.Background(), "infra3", []string{"http://127.0.0.1:42380"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.addName.Load(); got != "infra3" {
		t.Errorf("server saw name %q", got)
	}
	if r.ID != 0x96dbf27657837fe1 || r.Member.Name != "infra3" || !r.Member.IsLearner || r.Members[0].Name != "infra3" {
		t.Errorf("got %+v", r)
	}
}

func TestResolve(t *testing.T) {
	f := &fakeServer{clusterd: true}
	c := newClient(t, serve(t, f))
	tests := []struct {
		ref     string
		want    uint64
		wantErr error
	}{
		{"infra0", 0x77f41cbd71028a3a, nil},
		{"infra3", 0x96dbf27657837fe1, nil},
		{"77f41cbd71028a3a", 0x77f41cbd71028a3a, nil},
		{"12345abcde", 0x12345abcde, nil}, // hex, no such member: the server will say so
		{"infra9", 0, rpcerr.ErrMemberNotFound},
	}
	for _, tt := range tests {
		got, err := c.Resolve(context.Background(), tt.ref)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("Resolve(%q) = %x, %v; want %x, %v", tt.ref, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestResolveFullIDSendsNothing(t *testing.T) {
	f := &fakeServer{}
	if _, err := newClient(t, serve(t, f)).Resolve(context.Background(), "96DBF27657837FE1"); err != nil {
		t.Fatal(err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestResolveAmbiguousName(t *testing.T) {
	f := &fakeServer{list: func(ctx context.Context) error {
		// Two members under one name.
		return grpc.SetHeader(ctx, metadata.Pairs(wire.Members, membersValue(membership.Member{ID: 0x96dbf27657837fe1, Name: "abc", Started: true}, membership.Member{ID: 0x77f41cbd71028a3a, Name: "abc", Started: true})))
	}}
	_, err := newClient(t, serve(t, f)).Resolve(context.Background(), "abc")
	var amb *AmbiguousNameError
	if !errors.As(err, &amb) || !strings.Contains(err.Error(), "96dbf27657837fe1, 77f41cbd71028a3a") {
		t.Errorf("got %v", err)
	}
}

func TestNewRefusesBadEndpoints(t *testing.T) {
	for _, e := range []string{"127.0.0.1", "unix:///tmp/x", "ftp://127.0.0.1:2379"} {
		if _, err := New(Config{Endpoints: []string{e}, DialTimeout: time.Second}); err == nil {
			t.Errorf("New accepted endpoint %q", e)
		}
	}
	tlsCfg := &tls.Config{}
	for _, c := range []struct {
		eps     []string
		cfg     *tls.Config
		bareTLS bool
		ok      bool
	}{
		{[]string{"http://127.0.0.1:2379", "[::1]:2379"}, nil, false, true},
		{[]string{"https://127.0.0.1:2379", "https://[::1]:2379"}, nil, false, true},
		// a bare endpoint uses TLS with TLS flags or --insecure-transport=false, as in etcdctl
		{[]string{"https://127.0.0.1:2379", "[::1]:2379"}, tlsCfg, false, true},
		{[]string{"https://127.0.0.1:2379", "[::1]:2379"}, nil, true, true},
		{[]string{"https://127.0.0.1:2379", "[::1]:2379"}, nil, false, false},
		{[]string{"http://127.0.0.1:2379", "[::1]:2379"}, tlsCfg, false, false},
		{[]string{"http://127.0.0.1:2379", "https://[::1]:2379"}, tlsCfg, false, false},
	} {
		_, err := New(Config{Endpoints: c.eps, DialTimeout: time.Second, TLS: c.cfg, BareTLS: c.bareTLS})
		if (err == nil) != c.ok {
			t.Errorf("%v (TLS flags %v, bare TLS %v): %v, want accepted %v", c.eps, c.cfg != nil, c.bareTLS, err, c.ok)
		}
	}
}

func TestLearnerProgress(t *testing.T) {
	p := LearnerProgress{LeaderIndex: 1000, LearnerApplied: 900}
	if p.Behind() != 100 || p.Percent() != 90 {
		t.Errorf("got %d behind, %.1f%%", p.Behind(), p.Percent())
	}
	ahead := LearnerProgress{LeaderIndex: 10, LearnerApplied: 12}
	if ahead.Behind() != 0 || ahead.Percent() != 100 {
		t.Errorf("ahead: got %d behind, %.1f%%", ahead.Behind(), ahead.Percent())
	}
}

// TestNotFoundNamesUnstarted: a name that matches nothing while members without a name exist
// (on etcd, added and not started yet) lists them by ID and peer URLs, since the name may mean
// one of them; the error stays an rpcerr.ErrMemberNotFound.
func TestNotFoundNamesUnstarted(t *testing.T) {
	members := []Member{
		{ID: 0x77f41cbd71028a3a, Name: "infra0", PeerURLs: []string{"http://10.0.0.1:2380"}},
		{ID: 0xcdafbcc8ff50545c, PeerURLs: []string{"http://10.0.0.4:2380", "http://h4:2380"}, IsLearner: true},
	}
	_, err := ResolveIn(members, "infra3")
	want := `member not found: no member with ID or name "infra3"; not started yet, so without a name: cdafbcc8ff50545c (http://10.0.0.4:2380,http://h4:2380): give the member ID`
	if !errors.Is(err, rpcerr.ErrMemberNotFound) || err.Error() != want {
		t.Errorf("ResolveIn = %v; want %s", err, want)
	}
	if _, err := ResolveIn(members[:1], "infra3"); err.Error() != `member not found: no member with ID or name "infra3"` {
		t.Errorf("ResolveIn with every member started = %v", err)
	}
}
