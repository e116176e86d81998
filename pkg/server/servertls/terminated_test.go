package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"reflect"
	"testing"

	"google.golang.org/grpc/credentials"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// Terminated's AuthInfo for a connection whose handshake is done is what gRPC's own TLS
// credentials give for the same handshake: the admin check and gRPC read the same fields. A
// connection that is not TLS, or not yet handshaken, is refused.
func TestTerminatedGivesTheAuthInfoOfGRPCsTLS(t *testing.T) {
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("member")
	if err != nil {
		t.Fatal(err)
	}
	spiffe, _ := url.Parse("spiffe://example.org/ops")
	cli, err := ca.Issue(testpki.Client, "ops", func(c *x509.Certificate) { c.URIs = []*url.URL{spiffe} })
	if err != nil {
		t.Fatal(err)
	}
	srvCert, _ := srv.TLS()
	cliCert, _ := cli.TLS()
	srvCfg := &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), NextProtos: []string{"h2"}}
	cliCfg := &tls.Config{Certificates: []tls.Certificate{cliCert}, RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{"h2"}}

	// Each side's server handshake, against a client on a pipe.
	handshake := func(server func(net.Conn) (net.Conn, credentials.AuthInfo, error)) credentials.TLSInfo {
		t.Helper()
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go func() { _ = tls.Client(b, cliCfg).Handshake() }()
		_, info, err := server(a)
		if err != nil {
			t.Fatal(err)
		}
		return info.(credentials.TLSInfo)
	}
	want := handshake(credentials.NewTLS(srvCfg).ServerHandshake)
	got := handshake(func(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
		tc := tls.Server(c, srvCfg)
		if err := tc.Handshake(); err != nil {
			return nil, nil, err
		}
		return Terminated().ServerHandshake(tc)
	})
	if got.SecurityLevel != want.SecurityLevel || got.AuthType() != want.AuthType() {
		t.Errorf("security level %v, auth type %q; gRPC's TLS gives %v, %q", got.SecurityLevel, got.AuthType(), want.SecurityLevel, want.AuthType())
	}
	if !reflect.DeepEqual(got.SPIFFEID, want.SPIFFEID) || got.SPIFFEID == nil {
		t.Errorf("SPIFFE ID %v, gRPC's TLS gives %v", got.SPIFFEID, want.SPIFFEID)
	}
	if len(got.State.VerifiedChains) != 1 || got.State.VerifiedChains[0][0].Subject.CommonName != "ops" {
		t.Errorf("verified chains %v, want the client's", got.State.VerifiedChains)
	}
	if got.State.NegotiatedProtocol != want.State.NegotiatedProtocol || got.State.Version != want.State.Version {
		t.Errorf("state differs from gRPC's TLS: %+v", got.State)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, err := Terminated().ServerHandshake(a); err == nil {
		t.Error("a plain connection was taken")
	}
	if _, _, err := Terminated().ServerHandshake(tls.Server(a, srvCfg)); err == nil {
		t.Error("a TLS connection without its handshake was taken")
	}
}
