package command

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// TestEverySettingPrecedence: for every global setting, the file, then ETCDCTL_<FLAG>, then
// CLUSTERCTL_<FLAG>, then the flag, each winning over the ones before it.
func TestEverySettingPrecedence(t *testing.T) {
	values := map[string][4]string{ // file, ETCDCTL_*, CLUSTERCTL_*, flag
		"endpoints":                {"f:1", "e:1", "c:1", "l:1"},
		"dial-timeout":             {"1s", "2s", "3s", "4s"},
		"command-timeout":          {"1s", "2s", "3s", "4s"},
		"write-out":                {"simple", "table", "json", "env"},
		"cacert":                   {"f.crt", "e.crt", "c.crt", "l.crt"},
		"cert":                     {"f.crt", "e.crt", "c.crt", "l.crt"},
		"key":                      {"f.key", "e.key", "c.key", "l.key"},
		"insecure-skip-tls-verify": {"true", "false", "true", "false"},
		"insecure-transport":       {"false", "true", "false", "true"},
		"user":                     {"f", "e", "c", "l"},
		"password":                 {"fp", "ep", "cp", "lp"},
		"password-file":            {"f.pw", "e.pw", "c.pw", "l.pw"},
	}
	if len(values) != len(globalFlags) {
		t.Fatalf("%d settings tested, %d exist", len(values), len(globalFlags))
	}
	for _, name := range globalFlags {
		t.Run(name, func(t *testing.T) {
			noSettingsFromEnv(t)
			vals, ok := values[name]
			if !ok {
				t.Fatalf("no values for %s", name)
			}
			env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
			file := writeConfig(t, "c.yaml", name+": \""+vals[0]+"\"\n")
			get := func(args ...string) string {
				t.Helper()
				root := newRootCmd(&Globals{})
				f := root.PersistentFlags()
				if err := f.Parse(append([]string{"--config-file=" + file}, args...)); err != nil {
					t.Fatal(err)
				}
				v, err := loadSettings(f)
				if err != nil {
					t.Fatal(err)
				}
				if name == "endpoints" {
					return strings.Join(v.GetStringSlice(name), ",")
				}
				return v.GetString(name)
			}
			if got := get(); got != vals[0] {
				t.Errorf("file: %q, want %q", got, vals[0])
			}
			t.Setenv("ETCDCTL_"+env, vals[1])
			if got := get(); got != vals[1] {
				t.Errorf("ETCDCTL_%s over the file: %q, want %q", env, got, vals[1])
			}
			t.Setenv("CLUSTERCTL_"+env, vals[2])
			if got := get(); got != vals[2] {
				t.Errorf("CLUSTERCTL_%s over ETCDCTL_%s: %q, want %q", env, env, got, vals[2])
			}
			if got := get("--" + name + "=" + vals[3]); got != vals[3] {
				t.Errorf("flag over CLUSTERCTL_%s: %q, want %q", env, got, vals[3])
			}
		})
	}
}

// TestKubeadmShell: the variables of a kubeadm control plane's etcdctl shell alone reach a
// mutual-TLS member; ETCDCTL_API is accepted silently.
func TestKubeadmShell(t *testing.T) {
	noSettingsFromEnv(t)
	p := newCommandPKI(t)
	s := serveStub(t, p, nil)
	t.Setenv("ETCDCTL_API", "3")
	t.Setenv("ETCDCTL_ENDPOINTS", "https://"+s.addr)
	t.Setenv("ETCDCTL_CACERT", p.ca.CertFile)
	t.Setenv("ETCDCTL_CERT", p.client.CertFile)
	t.Setenv("ETCDCTL_KEY", p.client.KeyFile)
	stdout, stderr, code := runArgs("member", "list")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "infra0") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// a bare host:port uses TLS once a TLS setting is given, as in etcdctl
	t.Setenv("ETCDCTL_ENDPOINTS", s.addr)
	if _, stderr, code := runArgs("member", "list"); code != 0 {
		t.Errorf("bare endpoint with ETCDCTL_CACERT: exit %d, %q", code, stderr)
	}
}

// TestBadSecurityInputsSendNothing: files and flags refused as bad arguments before dialing.
func TestBadSecurityInputsSendNothing(t *testing.T) {
	noSettingsFromEnv(t)
	p := newCommandPKI(t)
	addr, conns := listener(t)
	ep := "--endpoints=https://" + addr
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		stderr string // a prefix
	}{
		{[]string{ep, "--cacert=/nonexistent/ca.crt"}, "Error: --cacert /nonexistent/ca.crt: no such file or directory"},
		{[]string{ep, "--cacert=" + garbage}, "Error: --cacert " + garbage + ": no PEM certificate in the file"},
		{[]string{ep, "--cert=" + p.client.CertFile}, "Error: --cert needs --key"},
		{[]string{ep, "--key=" + p.client.KeyFile}, "Error: --key needs --cert"},
		{[]string{ep, "--cert=" + p.client.CertFile, "--key=/nonexistent/k.key"}, "Error: --key /nonexistent/k.key: no such file or directory"},
		{[]string{ep, "--cert=" + p.client.CertFile, "--key=" + p.other.KeyFile}, "Error: --cert " + p.client.CertFile + " and --key " + p.other.KeyFile + " do not match"},
		{[]string{ep, "--user=root"}, "Error: --user root: no password given (stdin is not a terminal)"},
		{[]string{ep, "--password=secret"}, "Error: --password needs --user"},
		{[]string{ep, "--insecure-transport=maybe"}, "Error: invalid argument \"maybe\""},
		{[]string{"--endpoints=https://" + addr + ",http://" + addr}, "Error: endpoints \"https://" + addr + "\" and \"http://" + addr + "\": one uses TLS"},
		{[]string{"--endpoints=https://" + addr + "," + addr}, "Error: endpoints \"https://" + addr + "\" and \"" + addr + "\": one uses TLS"},
	} {
		args := append(c.args, "member", "remove", "infra0")
		stdout, stderr, code := runArgs(args...)
		if code != 128 || stdout != "" || !strings.HasPrefix(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "secret") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 128 and one line starting %q", c.args, code, stdout, stderr, c.stderr)
		}
	}
	t.Setenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "yes please")
	if _, stderr, code := runArgs(ep, "member", "list"); code != 128 || stderr != "Error: --insecure-skip-tls-verify: \"yes please\" is not true or false\n" {
		t.Errorf("bad boolean from ETCDCTL_*: exit %d, %q", code, stderr)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections made", n)
	}
}

// TestTLSAndAuthFailures: each failure is one line naming the endpoint or quoting etcd, with its
// exit code, and nothing is removed.
func TestTLSAndAuthFailures(t *testing.T) {
	noSettingsFromEnv(t)
	p := newCommandPKI(t)
	foreign := newCommandPKI(t)
	good := serveStub(t, p, &stubAuth{})
	bad := serveStub(t, foreign, nil)
	plain := serveStub(t, nil, nil)
	ca, cert, key := "--cacert="+p.ca.CertFile, "--cert="+p.client.CertFile, "--key="+p.client.KeyFile
	https := func(s *stub) string { return "--endpoints=https://" + s.addr }
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown authority", []string{https(bad), ca, cert, key}, 20, "Error: https://" + bad.addr + ": the server's certificate is signed by an unknown authority: pass --cacert"},
		{"no client certificate", []string{https(good), ca}, 20, "Error: https://" + good.addr + ": the server requires a client certificate"},
		{"TLS to plain", []string{https(plain), ca}, 20, "Error: https://" + plain.addr + ": the server does not speak TLS: use http://" + plain.addr},
		{"plain to TLS", []string{"--endpoints=" + good.addr}, 20, "Error: " + good.addr + ": the server expects TLS"},
		{"TLS on one, the other down", []string{"--endpoints=https://" + bad.addr + ",https://" + deadAddr(t), ca}, 20, "Error: no endpoint answered: (https://" + bad.addr + ": the server's certificate is signed by an unknown authority"},
		{"auth required", []string{https(good), ca, cert, key}, 23, "Error: etcdserver: user name is empty\n"},
		{"wrong password", []string{https(good), ca, cert, key, "--user=root:wrong"}, 22, "Error: etcdserver: authentication failed, invalid user ID or password\n"},
		{"not root", []string{https(good), ca, cert, key, "--user=bob", "--password=secret"}, 21, "Error: etcdserver: permission denied\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runArgs(append(c.args, "member", "remove", "infra0")...)
			if code != c.code || stdout != "" || !strings.HasPrefix(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and one line starting %q", code, stdout, stderr, c.code, c.stderr)
			}
		})
	}
	if n := good.removals.Load() + bad.removals.Load() + plain.removals.Load(); n != 0 {
		t.Errorf("%d members removed", n)
	}
	// root succeeds, over TLS, with the token renewed once after it expired
	args := []string{https(good), ca, cert, key, "--user=root:secret"}
	if _, stderr, code := runArgs(append(args, "member", "list")...); code != 0 {
		t.Fatalf("root: exit %d, %q", code, stderr)
	}
	good.auth.expired.Store(true)
	if stdout, stderr, code := runArgs(append(args, "member", "remove", "infra0")...); code != 0 || !strings.HasPrefix(stdout, "Member 77f41cbd71028a3a removed") {
		t.Fatalf("root remove: exit %d, %q %q", code, stdout, stderr)
	}
	if good.removals.Load() != 1 {
		t.Errorf("%d removals, want 1", good.removals.Load())
	}
	// completion over TLS with auth offers the names
	stdout, _, _ := runArgs(append(args, "__complete", "member", "remove", "inf")...)
	if !strings.Contains(stdout, "infra0\t77f41cbd71028a3a") {
		t.Errorf("completion: %q", stdout)
	}
}

type commandPKI struct {
	ca, other      *testpki.CA
	server, client *testpki.Pair
}

func newCommandPKI(t *testing.T) *commandPKI {
	t.Helper()
	dir := t.TempDir()
	must := func(p *testpki.Pair, err error) *testpki.Pair {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, err := testpki.NewCA(dir, "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testpki.NewCA(dir, "other", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return &commandPKI{ca: ca, other: other, server: must(ca.Server("m1")), client: must(ca.Client("root"))}
}

// stub is etcd's Cluster and Auth services as clusterctl sees them, over mutual TLS.
type stub struct {
	pb.UnimplementedClusterServer
	pb.UnimplementedAuthServer
	pb.UnimplementedMaintenanceServer
	addr     string
	auth     *stubAuth
	removals atomic.Int32
}

// stubAuth: root/secret and bob/secret get a token; expired makes the server forget it once.
type stubAuth struct {
	expired atomic.Bool
	n       atomic.Int32
}

var stubMember = &pb.Member{ID: 0x77f41cbd71028a3a, Name: "infra0", PeerURLs: []string{"https://127.0.0.1:2380"}, ClientURLs: []string{"https://127.0.0.1:2379"}}

func (s *stub) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return &pb.MemberListResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: stubMember.ID}, Members: []*pb.Member{stubMember}}, nil
}

func (s *stub) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	s.removals.Add(1)
	return &pb.MemberRemoveResponse{Header: &pb.ResponseHeader{ClusterId: 1}}, nil
}

func (s *stub) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: stubMember.ID}, Leader: stubMember.ID}, nil
}

func (s *stub) Authenticate(_ context.Context, r *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	if (r.Name != "root" && r.Name != "bob") || r.Password != "secret" {
		return nil, rpcerr.ErrAuthFailed.GRPCStatus().Err()
	}
	return &pb.AuthenticateResponse{Token: fmt.Sprintf("%s.%d", r.Name, s.auth.n.Add(1))}, nil
}

func (s *stub) check(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	// etcd reads no token for a status or a member list.
	if s.auth == nil || strings.HasSuffix(info.FullMethod, "/Authenticate") || strings.HasSuffix(info.FullMethod, "/MemberList") || strings.HasSuffix(info.FullMethod, "/Status") {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	tok := md.Get(rpctypes.TokenFieldNameGRPC)
	switch {
	case len(tok) == 0:
		return nil, rpcerr.ErrUserEmpty.GRPCStatus().Err()
	case s.auth.expired.CompareAndSwap(true, false):
		return nil, rpcerr.ErrInvalidAuthToken.GRPCStatus().Err()
	case !strings.HasPrefix(tok[0], "root."):
		return nil, rpcerr.ErrPermissionDenied.GRPCStatus().Err()
	}
	return handler(ctx, req)
}

// serveStub serves a stub on 127.0.0.1: over mutual TLS with p's server certificate, or plain
// when p is nil; with etcd's auth when a is set.
func serveStub(t *testing.T, p *commandPKI, a *stubAuth) *stub {
	t.Helper()
	s := &stub{auth: a}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.check)}
	if p != nil {
		cert, err := p.server.TLS()
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.ca.Pool(),
		})))
	}
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterClusterServer(srv, s)
	pb.RegisterAuthServer(srv, s)
	pb.RegisterMaintenanceServer(srv, s)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	s.addr = l.Addr().String()
	return s
}

func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
