package portmux

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/server/servertls"
)

// tlsPort is a TLS mux on loopback with client certificates required, as clusterd's client
// port with --client-cert-auth: gRPC behind servertls.Terminated, HTTP answering "http/1" or
// "http/2" and passing HTTP/2 gRPC requests to the same gRPC server.
type tlsPort struct {
	addr string
	ca   *testpki.CA
	mux  *Mux

	mu      sync.Mutex
	refused []error
	leaves  []string // the CN of the verified leaf each gRPC call saw in its peer's AuthInfo
}

func serveTLSMux(t testing.TB, timeout time.Duration) *tlsPort {
	t.Helper()
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	srvPair, err := ca.Server("member")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := srvPair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), NextProtos: []string{"h2"}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsPort{addr: l.Addr().String(), ca: ca}
	p.mux = NewTLS(l, timeout, cfg, func(_ string, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.refused = append(p.refused, err)
	})
	gs := grpc.NewServer(grpc.Creds(servertls.Terminated()), grpc.UnaryInterceptor(p.recordLeaf))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	hs := &http.Server{Handler: SplitHTTP2(gs, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))}
	done := make(chan struct{}, 3)
	go func() { _ = gs.Serve(p.mux.GRPC()); done <- struct{}{} }()
	go func() { _ = hs.Serve(p.mux.HTTP()); done <- struct{}{} }()
	go func() { _ = p.mux.Serve(); done <- struct{}{} }()
	t.Cleanup(func() {
		p.mux.Close()
		gs.Stop()
		hs.Close()
		for range 3 {
			<-done
		}
	})
	return p
}

func (p *tlsPort) recordLeaf(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	cn := "none"
	if pr, ok := peer.FromContext(ctx); ok {
		if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
			cn = info.State.VerifiedChains[0][0].Subject.CommonName
		}
	}
	p.mu.Lock()
	p.leaves = append(p.leaves, cn)
	p.mu.Unlock()
	return h(ctx, req)
}

// clientConfig trusts the port's CA and presents a certificate with the CN cn ("" for none).
func (p *tlsPort) clientConfig(t testing.TB, cn string, protos ...string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.ca.Pool(), NextProtos: protos}
	if cn != "" {
		pair, err := p.ca.Client(cn)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pair.TLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func (p *tlsPort) check(t testing.TB, cfg *tls.Config) error {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+p.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// Over TLS, gRPC clients reach the gRPC server with the verified chain in their AuthInfo,
// whether they offer h2 alone (the gRPC half) or h2 and http/1.1 (the HTTP half, through
// SplitHTTP2); HTTP clients get HTTP/1.1 or HTTP/2 as they ask.
func TestTLSBothOnOnePort(t *testing.T) {
	p := serveTLSMux(t, 5*time.Second)
	if err := p.check(t, p.clientConfig(t, "grpc-only")); err != nil {
		t.Errorf("a gRPC client offering h2: %v", err)
	}
	if err := p.check(t, p.clientConfig(t, "grpc-both", "h2", "http/1.1")); err != nil {
		t.Errorf("a gRPC client offering h2 and http/1.1: %v", err)
	}
	p.mu.Lock()
	if len(p.leaves) != 2 || p.leaves[0] != "grpc-only" || p.leaves[1] != "grpc-both" {
		t.Errorf("the calls saw the verified leaves %v, want [grpc-only grpc-both]", p.leaves)
	}
	p.mu.Unlock()
	for _, tt := range []struct {
		h2   bool
		want string
	}{{false, "HTTP/1.1"}, {true, "HTTP/2.0"}} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: p.clientConfig(t, "scraper"), ForceAttemptHTTP2: tt.h2}}
		resp, err := hc.Get("https://" + p.addr + "/metrics")
		if err != nil {
			t.Fatalf("GET over %s: %v", tt.want, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tt.want {
			t.Errorf("GET answered %q, want %q", b, tt.want)
		}
		hc.CloseIdleConnections()
	}
	// No ALPN at all: HTTP/1.
	c, err := tls.Dial("tcp", p.addr, p.clientConfig(t, "raw"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	if b, _ := io.ReadAll(c); !strings.Contains(string(b), "HTTP/1.0") {
		t.Errorf("a client without ALPN got %q", b)
	}
}

// A client without a certificate, or with one from another CA, is refused at the handshake and
// reported; a connection that never sends a ClientHello is closed at the deadline.
func TestTLSRefusedAndSilent(t *testing.T) {
	const timeout = 300 * time.Millisecond
	p := serveTLSMux(t, timeout)
	other, err := testpki.NewCA(t.TempDir(), "other", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	stranger := p.clientConfig(t, "")
	pair, err := other.Client("stranger")
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := pair.TLS()
	// Presented even though the server asks for another CA's, as a misconfigured client does.
	stranger.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	for _, cfg := range []*tls.Config{p.clientConfig(t, ""), stranger} {
		if err := p.check(t, cfg); err == nil {
			t.Error("a call without a certificate of the CA succeeded")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n := len(p.refused)
		var errs []error
		errs = append(errs, p.refused...)
		p.mu.Unlock()
		if n >= 2 {
			var verr *tls.CertificateVerificationError
			if !errors.As(errors.Join(errs...), &verr) || verr.UnverifiedCertificates[0].Subject.CommonName != "stranger" {
				t.Errorf("the refusals %v do not carry the stranger's certificate", errs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals reported, want at least 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a silent connection: read %d bytes, %v; want it closed", n, err)
	}
	if waited := time.Since(start); waited > timeout+time.Second {
		t.Errorf("a silent connection was closed after %v, deadline %v", waited, timeout)
	}
}
