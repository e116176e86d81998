package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// authServer is etcd's auth as a client sees it: Authenticate hands out a token for root/secret
// (and for bob/secret, who is not root), every call but Status and MemberList needs the current
// token, and expire makes the server forget it. leaderless makes Authenticate wait for the
// caller's deadline, as etcd's does without a leader (it is a raft entry).
type authServer struct {
	pb.UnimplementedAuthServer
	leaderless bool
	mu         sync.Mutex
	tokens     map[string]string // token -> user
	n          int
	auths      int
	removals   int
}

func (a *authServer) Authenticate(ctx context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if a.leaderless {
		<-ctx.Done()
		return nil, rpcerr.ErrTimeout.GRPCStatus().Err()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if (r.Name != "root" && r.Name != "bob") || r.Password != "secret" {
		return nil, rpcerr.ErrAuthFailed.GRPCStatus().Err()
	}
	a.n++
	a.auths++
	tok := fmt.Sprintf("tok.%d", a.n)
	a.tokens[tok] = r.Name
	return &pb.AuthenticateResponse{Header: pbHeader, Token: tok}, nil
}

func (a *authServer) expire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.tokens)
}

// check is a unary interceptor doing what etcd does with the token before any handler.
func (a *authServer) check(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod == pb.Auth_Authenticate_FullMethodName || tokenFree[info.FullMethod] {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	toks := md.Get(rpctypes.TokenFieldNameGRPC)
	if len(toks) == 0 {
		return nil, rpcerr.ErrUserEmpty.GRPCStatus().Err()
	}
	a.mu.Lock()
	user, ok := a.tokens[toks[0]]
	if ok && info.FullMethod == pb.Cluster_MemberRemove_FullMethodName && user == "root" {
		a.removals++
	}
	a.mu.Unlock()
	switch {
	case !ok:
		return nil, rpcerr.ErrInvalidAuthToken.GRPCStatus().Err()
	case user != "root":
		return nil, rpcerr.ErrPermissionDenied.GRPCStatus().Err()
	}
	return handler(ctx, req)
}

// securePKI is a CA, a server certificate for 127.0.0.1 and a client certificate.
type securePKI struct {
	ca, other      *testpki.CA
	server, client *testpki.Pair
}

func newSecurePKI(t *testing.T) *securePKI {
	t.Helper()
	ca, other := testpki.NewCAs(t, t.TempDir(), testpki.ECDSAP256)
	issue := testpki.Must[*testpki.Pair](t)
	return &securePKI{ca: ca, other: other, server: issue(ca.Server("m1")), client: issue(ca.Client("root"))}
}

// serveSecure serves the fake Cluster and the auth server over mutual TLS (tls nil: plain).
func serveSecure(t *testing.T, p *securePKI, f *fakeServer, a *authServer) string {
	t.Helper()
	var opts []grpc.ServerOption
	if p != nil {
		cert, err := p.server.TLS()
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.ca.Pool(),
		})))
	}
	if a != nil {
		opts = append(opts, grpc.UnaryInterceptor(a.check))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	pb.RegisterClusterServer(s, f)
	pb.RegisterMaintenanceServer(s, f)
	if a != nil {
		pb.RegisterAuthServer(s, a)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func newAuthServer() *authServer { return &authServer{tokens: map[string]string{}} }

func secureClient(t *testing.T, o clienttls.Options, user, password string, endpoints ...string) *Client {
	t.Helper()
	var cfg *tls.Config
	if o != (clienttls.Options{}) {
		var err error
		if cfg, err = o.Config(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, TLS: cfg, Username: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAuthTokenOnEveryCallAndRenewedOnce(t *testing.T) {
	p := newSecurePKI(t)
	f := &fakeServer{remove: func(context.Context) error { return nil }}
	a := newAuthServer()
	addr := serveSecure(t, p, f, a)
	o := clienttls.Options{CACert: p.ca.CertFile, Cert: p.client.CertFile, Key: p.client.KeyFile}
	c := secureClient(t, o, "root", "secret", "https://"+addr)
	ctx := context.Background()
	// A member list needs no token: no login.
	if _, err := c.MemberList(ctx, false); err != nil {
		t.Fatal(err)
	}
	if a.auths != 0 {
		t.Errorf("%d authentications for a member list, want 0", a.auths)
	}
	for range 2 {
		if _, err := c.MemberRemove(ctx, 0x96dbf27657837fe1); err != nil {
			t.Fatal(err)
		}
	}
	if a.auths != 1 {
		t.Errorf("%d authentications for two calls, want 1", a.auths)
	}
	// The token expires: one new one, and the request (a change too: it was refused before
	// anything was done) goes through once.
	a.expire()
	if _, err := c.MemberRemove(ctx, 0x96dbf27657837fe1); err != nil {
		t.Fatal(err)
	}
	if a.auths != 2 || a.removals != 3 {
		t.Errorf("after expiry: %d authentications, %d removals; want 2 and 3", a.auths, a.removals)
	}
}

func TestAuthRefusals(t *testing.T) {
	f := &fakeServer{remove: func(context.Context) error { return nil }}
	a := newAuthServer()
	addr := serveSecure(t, nil, f, a)
	ctx := context.Background()
	for _, c := range []struct {
		user, password string
		want           error
	}{
		{"root", "wrong", rpcerr.ErrAuthFailed},
		{"", "", rpcerr.ErrUserEmpty},
		{"bob", "secret", rpcerr.ErrPermissionDenied},
	} {
		cl := secureClient(t, clienttls.Options{}, c.user, c.password, addr)
		_, err := cl.MemberRemove(ctx, 0x96dbf27657837fe1)
		if !errors.Is(err, c.want) {
			t.Errorf("user %q: %v, want %v", c.user, err, c.want)
		}
	}
	if a.removals != 0 || f.calls.Load() != 0 {
		t.Errorf("%d removals, %d calls reached the server", a.removals, f.calls.Load())
	}
}

func TestAuthNotOnServerGoesOnWithoutToken(t *testing.T) {
	// A server without the Auth service (clusterd): its TLS settings decide, the user is not asked.
	addr := serve(t, &fakeServer{})
	c := secureClient(t, clienttls.Options{}, "root", "secret", addr)
	if _, err := c.MemberList(context.Background(), false); err != nil {
		t.Fatal(err)
	}
}

func TestTLSFailureNamesEndpointAndMovesOn(t *testing.T) {
	p := newSecurePKI(t)
	good := serveSecure(t, p, &fakeServer{}, nil)
	foreign := newSecurePKI(t)
	bad := serveSecure(t, foreign, &fakeServer{}, nil)
	o := clienttls.Options{CACert: p.ca.CertFile, Cert: p.client.CertFile, Key: p.client.KeyFile}

	// the first endpoint's certificate is from another CA: the next one answers
	c := secureClient(t, o, "", "", "https://"+bad, "https://"+good)
	if _, err := c.MemberList(context.Background(), false); err != nil {
		t.Fatalf("want the second endpoint to answer: %v", err)
	}

	// alone, it is a TLS error that names the endpoint and says what to do
	for _, tc := range []struct {
		name string
		o    clienttls.Options
		ep   string
		kind clienttls.Kind
	}{
		{"unknown authority", o, "https://" + bad, clienttls.UnknownAuthority},
		{"no client certificate", clienttls.Options{CACert: p.ca.CertFile}, "https://" + good, clienttls.ClientCertRequired},
		{"TLS to plain", o, "https://" + serve(t, &fakeServer{}), clienttls.TLSToPlain},
		{"plain to TLS", clienttls.Options{}, "http://" + good, clienttls.PlainToTLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg *tls.Config
			if tc.o != (clienttls.Options{}) {
				var err error
				if cfg, err = tc.o.Config(); err != nil {
					t.Fatal(err)
				}
			}
			c, err := New(Config{Endpoints: []string{tc.ep}, DialTimeout: 2 * time.Second, TLS: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.MemberList(context.Background(), false)
			var ce *ConnectError
			if !errors.As(err, &ce) || ce.TLS() == nil || ce.TLS().Kind != tc.kind {
				t.Fatalf("got %v, want a ConnectError of TLS kind %d", err, tc.kind)
			}
			if got := err.Error(); got != ce.TLS().Error() || got[:len(tc.ep)] != tc.ep {
				t.Errorf("message %q: want the TLS line, starting with the endpoint", got)
			}
		})
	}
}

// MoveLeader to the member the client is connected to goes over that connection: no second
// TLS handshake and no second authentication. To another member it opens a connection of its
// own, authenticates there, and closes it, leaving the client's connection open.
func TestMoveLeaderOnTheOpenConnection(t *testing.T) {
	p := newSecurePKI(t)
	f, g := &fakeServer{}, &fakeServer{}
	a, b := newAuthServer(), newAuthServer()
	addr, other := serveSecure(t, p, f, a), serveSecure(t, p, g, b)
	o := clienttls.Options{CACert: p.ca.CertFile, Cert: p.client.CertFile, Key: p.client.KeyFile}
	c := secureClient(t, o, "root", "secret", "https://"+addr, "https://"+other)
	ctx := context.Background()
	if _, err := c.MemberList(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MoveLeader(ctx, "https://"+addr+"/", 1); err != nil {
		t.Fatal(err)
	}
	if a.auths != 1 || f.calls.Load() != 2 {
		t.Fatalf("move-leader at the connected member: %d authentications and %d calls there, want 1 and 2", a.auths, f.calls.Load())
	}
	if _, err := c.MoveLeader(ctx, "https://"+other, 1); err != nil {
		t.Fatal(err)
	}
	if b.auths != 1 || g.calls.Load() != 1 {
		t.Fatalf("move-leader at another member: %d authentications and %d calls there, want 1 and 1", b.auths, g.calls.Load())
	}
	if _, err := c.MemberList(ctx, false); err != nil {
		t.Fatalf("the client's connection after a move-leader elsewhere: %v", err)
	}
	if a.auths != 1 || f.calls.Load() != 3 {
		t.Fatalf("after both: %d authentications and %d calls at the connected member, want 1 and 3", a.auths, f.calls.Load())
	}
}

// TestStatusOfEachNeedsNoLogin: a status needs no token, so asking three members for theirs
// with a user makes no Authenticate (on etcd a raft entry each, which needs a leader).
func TestStatusOfEachNeedsNoLogin(t *testing.T) {
	a := newAuthServer()
	a.leaderless = true
	var eps []string
	for range 3 {
		eps = append(eps, serveSecure(t, nil, &fakeServer{}, a))
	}
	c := secureClient(t, clienttls.Options{}, "root", "secret", eps...)
	start := time.Now()
	for _, st := range c.StatusOfEach(context.Background(), eps, 5*time.Second) {
		if st.Err != nil {
			t.Fatalf("%s: %v", st.Endpoint, st.Err)
		}
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("statuses took %s: they waited for a login", took)
	}
	if a.auths != 0 {
		t.Errorf("%d authentications for three statuses, want 0", a.auths)
	}
}

// TestHealthOfEachAuthenticatesOnce: the clients of each endpoint share one token, so checking
// three members makes one Authenticate, and the token rides on every read.
func TestHealthOfEachAuthenticatesOnce(t *testing.T) {
	a := newAuthServer()
	var eps []string
	for range 3 {
		eps = append(eps, serveSecure(t, nil, &fakeServer{}, a))
	}
	c := secureClient(t, clienttls.Options{}, "root", "secret", eps...)
	for _, h := range c.HealthOfEach(context.Background(), eps, 5*time.Second) {
		if h.Err != nil {
			t.Fatalf("%s: %v", h.Endpoint, h.Err)
		}
	}
	if a.auths != 1 {
		t.Errorf("%d authentications for three checks, want 1", a.auths)
	}
}

// TestHealthWithoutLeader: a member whose status knows no leader for an election's length is
// unhealthy then, without the login that could not succeed before the deadline; one that finds
// its leader meanwhile (an election ending) logs in, reads and is healthy.
func TestHealthWithoutLeader(t *testing.T) {
	a := newAuthServer()
	a.leaderless = true
	f := &fakeServer{}
	f.noLeader.Store(true)
	ep := serveSecure(t, nil, f, a)
	c := secureClient(t, clienttls.Options{}, "root", "secret", ep)
	h := c.HealthOfEach(context.Background(), []string{ep}, 5*time.Second)[0]
	if !errors.Is(h.Err, rpcerr.ErrNoLeader) || h.Took < electionGrace || h.Took >= 2*electionGrace || a.auths != 0 {
		t.Errorf("health without a leader: %v after %s and %d logins, want %v after %s and none", h.Err, h.Took, a.auths, rpcerr.ErrNoLeader, electionGrace)
	}

	a.leaderless = false
	elected := time.AfterFunc(3*electionPoll, func() { f.noLeader.Store(false) })
	defer elected.Stop()
	if h := c.HealthOfEach(context.Background(), []string{ep}, 5*time.Second)[0]; h.Err != nil || a.auths != 1 {
		t.Errorf("health through an election: %v after %d logins, want healthy after 1", h.Err, a.auths)
	}
}

// TestChangeWithoutLeaderEndsAtOnce: a change needs a token, and a login needs a leader; when
// the member's status names none for an election's length, the login is given up with
// rpcerr.ErrNoLeader, as a read without a leader ends, long before the deadline. A login that answers
// slowly where a leader is known is waited for.
func TestChangeWithoutLeaderEndsAtOnce(t *testing.T) {
	a := newAuthServer()
	a.leaderless = true
	f := &fakeServer{}
	f.noLeader.Store(true)
	c := secureClient(t, clienttls.Options{}, "root", "secret", serveSecure(t, nil, f, a))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.MemberRemove(ctx, 1)
	if took := time.Since(start); !errors.Is(err, rpcerr.ErrNoLeader) || took >= loginPatience+2*electionGrace {
		t.Errorf("a removal without a leader: %v after %s, want %v within %s", err, took, rpcerr.ErrNoLeader, loginPatience+2*electionGrace)
	}

	f.noLeader.Store(false)
	ctx, cancel = context.WithTimeout(context.Background(), 2*electionGrace)
	defer cancel()
	start = time.Now()
	if _, err := c.MemberRemove(ctx, 1); errors.Is(err, rpcerr.ErrNoLeader) || time.Since(start) < 2*electionGrace-electionPoll {
		t.Errorf("a removal whose login is slow with a leader known: %v after %s, want the login waited for to the deadline", err, time.Since(start))
	}
}

// TestCheckLogin: after reads that needed no token, a wrong password is still reported where a
// leader could answer the login, and the login is skipped without a wait where none could.
func TestCheckLogin(t *testing.T) {
	a := newAuthServer()
	ep := serveSecure(t, nil, &fakeServer{}, a)
	ctx := context.Background()
	if err := secureClient(t, clienttls.Options{}, "root", "wrong", ep).CheckLogin(ctx, true); !errors.Is(err, rpcerr.ErrAuthFailed) {
		t.Errorf("wrong password, a leader known: %v, want %v", err, rpcerr.ErrAuthFailed)
	}
	if err := secureClient(t, clienttls.Options{}, "root", "secret", ep).CheckLogin(ctx, true); err != nil || a.auths != 1 {
		t.Errorf("right password: %v after %d authentications, want nil after 1", err, a.auths)
	}
	a.leaderless = true
	start := time.Now()
	if err := secureClient(t, clienttls.Options{}, "root", "wrong", ep).CheckLogin(ctx, false); err != nil || time.Since(start) > time.Second {
		t.Errorf("no leader known: %v after %s, want nil at once", err, time.Since(start))
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := secureClient(t, clienttls.Options{}, "root", "secret", ep).CheckLogin(tctx, true); err != nil {
		t.Errorf("a login that timed out: %v, want nil", err)
	}
}

// TestSplitReadsWithoutLogin: the groups' memberships are read without a login (a member list
// needs no token), so that telling a split makes no Authenticate, which on etcd is a raft entry
// in each group.
func TestSplitReadsWithoutLogin(t *testing.T) {
	a := newAuthServer()
	f0, f1 := &fakeServer{}, &fakeServer{}
	eps := []string{serveSecure(t, nil, f0, a), serveSecure(t, nil, f1, a)}
	c := secureClient(t, clienttls.Options{}, "root", "secret", eps...)
	// One cluster ID, two leaders in two terms: the answers alone prove nothing, so each group's
	// membership is read.
	answers := []EndpointStatus{
		{Endpoint: eps[0], Status: &Status{Header: Header{ClusterID: 1, MemberID: 10}, Leader: 10, RaftTerm: 5}},
		{Endpoint: eps[1], Status: &Status{Header: Header{ClusterID: 1, MemberID: 20}, Leader: 20, RaftTerm: 6}},
	}
	c.Split(context.Background(), answers, 5*time.Second)
	if f0.calls.Load() != 1 || f1.calls.Load() != 1 || a.auths != 0 {
		t.Errorf("%d and %d member lists, %d authentications; want one list a group and none", f0.calls.Load(), f1.calls.Load(), a.auths)
	}
}
