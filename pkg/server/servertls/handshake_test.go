package servertls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/logtest"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

func x509Pool(t *testing.T, certPEM []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in PEM")
	}
	return pool
}

// fixture is one CA with a peer certificate for the server, and a second CA for strangers.
type fixture struct {
	dir    string
	ca     *testpki.CA
	other  *testpki.CA
	server *testpki.Pair
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	ca, other := testpki.NewCAs(t, dir, testpki.ECDSAP256)
	return &fixture{dir: dir, ca: ca, other: other, server: must(t)(ca.Peer("m1"))}
}

func must(t *testing.T) func(*testpki.Pair, error) *testpki.Pair {
	return testpki.Must[*testpki.Pair](t)
}

// peerSettings is a kubeadm-like peer port: mutual TLS with one CA.
func (f *fixture) peerSettings() Settings {
	return Settings{Peer: Side{
		CertFile: f.server.CertFile, KeyFile: f.server.KeyFile, TrustedCAFile: f.ca.CertFile,
		ClientCertAuth: true, ListenURLs: []string{"https://127.0.0.1:0"},
	}}
}

// serve accepts TLS connections with cfg on 127.0.0.1, writes "ok" after each completed server
// handshake, and reports each server-side handshake result.
func serve(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 64)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = tc.HandshakeContext(ctx)
			cancel()
			if err == nil {
				_, err = tc.Write([]byte("ok"))
			}
			results <- err
			tc.Close()
		}
	}()
	return l.Addr().String(), results
}

// dial completes a handshake as a client and reads the server's "ok": with TLS 1.3 the client's
// handshake ends before the server has checked the client certificate, so a refusal shows only
// on the first read.
func dial(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	d := &tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: 5 * time.Second}}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	_, err = io.ReadFull(c, buf)
	return c.(*tls.Conn).ConnectionState(), err
}

func clientCfg(f *fixture, p *testpki.Pair) *tls.Config {
	cfg := &tls.Config{RootCAs: f.ca.Pool()}
	if p != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := p.TLS()
			return &c, err
		}
	}
	return cfg
}

func build(t *testing.T, s Settings) *Configs {
	t.Helper()
	cfgs, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return cfgs
}

func TestPeerServerRefusesWhatItMust(t *testing.T) {
	f := newFixture(t)
	cns := f.peerSettings()
	cns.Peer.AllowedCNs = []string{"m1", "m2"}
	hosts := f.peerSettings()
	hosts.Peer.AllowedHostnames = []string{"m2.example"}
	type server struct {
		addr    string
		results <-chan error
	}
	start := func(s Settings) server {
		addr, results := serve(t, build(t, s).PeerServer)
		return server{addr, results}
	}
	clientOnly := f.peerSettings()
	clientOnly.Peer.AllowClientOnly = true
	byCN, byHost, open, lax := start(cns), start(hosts), start(f.peerSettings()), start(clientOnly)

	var verr *tls.CertificateVerificationError
	var nerr *NotAllowedError
	for _, c := range []struct {
		name   string
		srv    server
		client *testpki.Pair
		want   func(error) bool // on the server side; nil: accepted
	}{
		{"allowed CN", byCN, must(t)(f.ca.Peer("m2")), nil},
		{"CN not allowed", byCN, must(t)(f.ca.Peer("m3")), func(err error) bool {
			return errors.As(err, &nerr) && nerr.Flag == "--peer-cert-allowed-cn" && nerr.Cert.Subject.CommonName == "m3"
		}},
		{"allowed host name", byHost, must(t)(f.ca.Peer("m9", testpki.Hosts("m2.example"))), nil},
		{"host name not allowed", byHost, must(t)(f.ca.Peer("m2")), func(err error) bool {
			return errors.As(err, &nerr) && nerr.Flag == "--peer-cert-allowed-hostname"
		}},
		{"any CN without a list", open, must(t)(f.ca.Peer("m3")), nil},
		{"unknown CA", open, must(t)(f.other.Peer("m1")), func(err error) bool {
			return errors.As(err, &verr) && strings.Contains(err.Error(), "unknown authority")
		}},
		{"expired", open, must(t)(f.ca.Peer("m1", testpki.Expired())), func(err error) bool {
			return errors.As(err, &verr) && strings.Contains(err.Error(), "expired")
		}},
		{"no certificate", open, nil, func(err error) bool { return strings.Contains(err.Error(), "certificate") }},
		{"server certificate as client", open, must(t)(f.ca.Server("m1")), func(err error) bool {
			return errors.As(err, &verr) && strings.Contains(err.Error(), "incompatible key usage")
		}},
		// A client certificate of the CA (clusterctl's, where one CA serves both ports) is
		// refused on the peer port, with a CN the allow list takes too, unless the flag says.
		{"client certificate", open, must(t)(f.ca.Client("m1")), func(err error) bool {
			return errors.As(err, &nerr) && nerr.Flag == ClientOnlyFlag && err.Error() ==
				`certificate CN "m1" is for client use only (no serverAuth extended key usage), which the peer port refuses without --peer-cert-allow-client-only`
		}},
		{"client certificate with an allowed CN", byCN, must(t)(f.ca.Client("m2")), func(err error) bool {
			return errors.As(err, &nerr) && nerr.Flag == ClientOnlyFlag
		}},
		{"client certificate with " + ClientOnlyFlag, lax, must(t)(f.ca.Client("m1")), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, cerr := dial(c.srv.addr, clientCfg(f, c.client))
			serr := <-c.srv.results
			if c.want == nil {
				if cerr != nil || serr != nil {
					t.Fatalf("refused: client %v, server %v", cerr, serr)
				}
				return
			}
			if cerr == nil {
				t.Errorf("client was not refused")
			}
			if serr == nil || !c.want(serr) {
				t.Errorf("server error %v (%T), want the other refusal", serr, serr)
			}
		})
	}
}

func TestPeerClientChecksTheServer(t *testing.T) {
	f := newFixture(t)
	foreign := must(t)(f.other.Peer("m2"))
	disallowed := must(t)(f.ca.Peer("m3"))
	s := f.peerSettings()
	s.Peer.AllowedCNs = []string{"m1", "m2"}
	dialer := build(t, s).PeerClient

	for _, c := range []struct {
		name   string
		server *testpki.Pair
		want   string
	}{
		{"same CA, allowed", f.server, ""},
		{"other CA", foreign, "unknown authority"},
		{"CN not allowed", disallowed, `CN "m3" is not allowed by --peer-cert-allowed-cn=m1,m2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := &tls.Config{
				Certificates: []tls.Certificate{must2(t, c.server)},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    f.ca.Pool(),
			}
			addr, results := serve(t, srv)
			_, err := dial(addr, dialer)
			<-results
			if c.want == "" && err != nil {
				t.Fatalf("dial: %v", err)
			}
			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("dial: %v, want %q", err, c.want)
			}
		})
	}
}

func must2(t *testing.T, p *testpki.Pair) tls.Certificate {
	t.Helper()
	c, err := p.TLS()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRenewedCertificateServesNewConnections(t *testing.T) {
	f := newFixture(t)
	// The files clusterd is pointed at; the fixture's own stay untouched.
	certFile, keyFile := filepath.Join(f.dir, "server.pem"), filepath.Join(f.dir, "server-key.pem")
	old := must(t)(f.ca.Server("before"))
	if err := old.WriteTo(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Recorder{}
	s := Settings{
		Client: Side{CertFile: certFile, KeyFile: keyFile, ListenURLs: []string{"https://127.0.0.1:0"}},
		Logger: slog.New(logs),
	}
	addr, results := serve(t, build(t, s).Client)
	served := func() string {
		t.Helper()
		st, err := dial(addr, clientCfg(f, nil))
		if serr := <-results; err != nil || serr != nil {
			t.Fatalf("handshake: client %v, server %v", err, serr)
		}
		return st.PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "before" {
		t.Fatalf("served %q", cn)
	}
	renewed := must(t)(f.ca.Server("after"))
	if err := renewed.WriteTo(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if cn := served(); cn != "after" {
		t.Fatalf("after renewal served %q, want the renewed certificate", cn)
	}

	// Halfway through the next renewal (certificate written, key not yet) the last good pair
	// stays in service, and the failure is logged once however many handshakes see it.
	next := must(t)(f.ca.Server("next"))
	if err := os.WriteFile(certFile, next.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if cn := served(); cn != "after" {
			t.Fatalf("mid-renewal served %q", cn)
		}
	}
	if n := logs.Count("cannot reload certificate"); n != 1 {
		t.Fatalf("reload failure logged %d times, want once:\n%s", n, logs)
	}
	if err := os.WriteFile(keyFile, next.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := served(); cn != "next" {
		t.Fatalf("after the key arrived served %q", cn)
	}
}

func TestBuildRefusesBadFilesNamingTheFlag(t *testing.T) {
	f := newFixture(t)
	otherKey := must(t)(f.ca.Peer("m2")).KeyFile
	for _, c := range []struct {
		name   string
		change func(*Settings)
		prefix string
	}{
		{"missing cert", func(s *Settings) { s.Peer.CertFile = filepath.Join(f.dir, "nope.pem") }, "--peer-cert-file "},
		{"mismatched key", func(s *Settings) { s.Peer.KeyFile = otherKey }, "--peer-cert-file "},
		{"missing CA", func(s *Settings) { s.Peer.TrustedCAFile = filepath.Join(f.dir, "nope.pem") }, "--peer-trusted-ca-file "},
		{"CA not PEM", func(s *Settings) { s.Peer.TrustedCAFile = otherKey }, "--peer-trusted-ca-file "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := f.peerSettings()
			c.change(&s)
			_, err := Build(s)
			var se *SettingError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), c.prefix) {
				t.Fatalf("Build: %v, want %q...", err, c.prefix)
			}
		})
	}
}

func TestAutoTLS(t *testing.T) {
	dataDir := t.TempDir()
	s := Settings{
		Client:                 Side{AutoTLS: true, ListenURLs: []string{"https://127.0.0.1:0", "https://localhost:0"}},
		Peer:                   Side{AutoTLS: true, ListenURLs: []string{"https://127.0.0.1:0"}},
		SelfSignedCertValidity: 1,
		DataDir:                dataDir,
	}
	cfgs := build(t, s)
	certFile := filepath.Join(dataDir, "fixtures", "client", "cert.pem")
	first, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dataDir, "fixtures", "peer", "key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("peer key: %v %v", st, err)
	}
	// A client that trusts the self-signed certificate itself gets through for both names.
	pool := x509Pool(t, first)
	addr, results := serve(t, cfgs.Client)
	st, err := dial(addr, &tls.Config{RootCAs: pool})
	if serr := <-results; err != nil || serr != nil {
		t.Fatalf("handshake: client %v, server %v", err, serr)
	}
	if err := st.PeerCertificates[0].VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	// Peers with self-signed certificates talk to each other without verifying, as in etcd.
	paddr, presults := serve(t, cfgs.PeerServer)
	if _, err := dial(paddr, cfgs.PeerClient); err != nil {
		t.Fatalf("peer dial: %v", err)
	}
	<-presults
	// A restart reuses the certificate.
	build(t, s)
	again, _ := os.ReadFile(certFile)
	if string(again) != string(first) {
		t.Error("auto TLS made a new certificate on restart")
	}
}

func TestVersionsAndSuitesReachTheConfig(t *testing.T) {
	f := newFixture(t)
	s := f.peerSettings()
	s.TLSMinVersion = "TLS1.3"
	cfgs := build(t, s)
	if cfgs.PeerServer.MinVersion != tls.VersionTLS13 || cfgs.PeerClient.MinVersion != tls.VersionTLS13 {
		t.Fatalf("min version %x %x", cfgs.PeerServer.MinVersion, cfgs.PeerClient.MinVersion)
	}
	addr, results := serve(t, cfgs.PeerServer)
	_, err := dial(addr, &tls.Config{RootCAs: f.ca.Pool(), MaxVersion: tls.VersionTLS12})
	if serr := <-results; err == nil || serr == nil || !strings.Contains(serr.Error(), "version") {
		t.Fatalf("a TLS 1.2 client got through a TLS1.3 minimum: client %v, server %v", err, serr)
	}
	s.TLSMinVersion = ""
	if got := build(t, s).PeerServer.MinVersion; got != tls.VersionTLS12 {
		t.Fatalf("default min version %x, want TLS 1.2 as etcd", got)
	}
}

func TestRenewedPeerCertificateIsPresentedWhenDialing(t *testing.T) {
	f := newFixture(t)
	certFile, keyFile := filepath.Join(f.dir, "peer.pem"), filepath.Join(f.dir, "peer-key.pem")
	if err := must(t)(f.ca.Peer("before")).WriteTo(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	s := f.peerSettings()
	s.Peer.CertFile, s.Peer.KeyFile = certFile, keyFile
	dialer := build(t, s).PeerClient
	seen := make(chan string, 2)
	srv := &tls.Config{
		Certificates: []tls.Certificate{must2(t, f.server)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    f.ca.Pool(),
		VerifyConnection: func(cs tls.ConnectionState) error {
			seen <- cs.PeerCertificates[0].Subject.CommonName
			return nil
		},
	}
	addr, results := serve(t, srv)
	presented := func() string {
		t.Helper()
		if _, err := dial(addr, dialer); err != nil {
			t.Fatalf("dial: %v", err)
		}
		<-results
		return <-seen
	}
	if cn := presented(); cn != "before" {
		t.Fatalf("presented %q", cn)
	}
	if err := must(t)(f.ca.Peer("after")).WriteTo(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if cn := presented(); cn != "after" {
		t.Fatalf("after renewal presented %q", cn)
	}
}
