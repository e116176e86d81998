package clienttls

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

type pkiSet struct {
	ca, other                            *testpki.CA
	server, wrongHost, expired, notYet   *testpki.Pair
	foreignServer                        *testpki.Pair
	client, clientExpired, clientForeign *testpki.Pair
}

func newPKI(t *testing.T) *pkiSet {
	t.Helper()
	ca, other := testpki.NewCAs(t, t.TempDir(), testpki.ECDSAP256)
	issue := testpki.Must[*testpki.Pair](t)
	return &pkiSet{
		ca: ca, other: other,
		server:        issue(ca.Server("m1")),
		wrongHost:     issue(ca.Server("m1", testpki.WrongHost())),
		expired:       issue(ca.Server("m1", testpki.Expired())),
		notYet:        issue(ca.Server("m1", testpki.NotYetValid())),
		foreignServer: issue(other.Server("m1")),
		client:        issue(ca.Client("root")),
		clientExpired: issue(ca.Client("root", testpki.Expired())),
		clientForeign: issue(other.Client("root")),
	}
}

// serve starts a gRPC server with the health service on 127.0.0.1: plain when cert is nil,
// else TLS up to maxVersion, asking for client certificates from the CA when mutual.
func (p *pkiSet) serve(t *testing.T, cert *testpki.Pair, mutual bool, maxVersion uint16) string {
	t.Helper()
	creds := insecure.NewCredentials()
	if cert != nil {
		c, err := cert.TLS()
		if err != nil {
			t.Fatal(err)
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{c}, MaxVersion: maxVersion}
		if mutual {
			cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, p.ca.Pool()
		}
		creds = credentials.NewTLS(cfg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(creds))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// call dials addr as clusterctl will (grpc.NewClient, the Options' config) and makes one RPC.
func call(t *testing.T, addr string, o *Options) error {
	t.Helper()
	creds := insecure.NewCredentials()
	if o != nil {
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestExplainWhatGRPCReports(t *testing.T) {
	p := newPKI(t)
	trusting := &Options{CACert: p.ca.CertFile}
	withCert := func(c *testpki.Pair) *Options {
		return &Options{CACert: p.ca.CertFile, Cert: c.CertFile, Key: c.KeyFile}
	}
	for _, v := range []struct {
		name string
		max  uint16
	}{{"TLS1.3", tls.VersionTLS13}, {"TLS1.2", tls.VersionTLS12}} {
		for _, c := range []struct {
			name   string
			server *testpki.Pair
			mutual bool
			client *Options
			want   Kind // 0: the call succeeds
			detail string
		}{
			{"good", p.server, true, withCert(p.client), 0, ""},
			{"unknown authority", p.foreignServer, false, trusting, UnknownAuthority, ""},
			{"name mismatch", p.wrongHost, false, trusting, NameMismatch, "x509: certificate is valid for 192.0.2.1, not 127.0.0.1"},
			{"expired", p.expired, false, trusting, Expired, " is after "},
			{"not yet valid", p.notYet, false, trusting, NotYetValid, " is before "},
			{"client certificate required", p.server, true, trusting, ClientCertRequired, ""},
			{"client certificate from another CA", p.server, true, withCert(p.clientForeign), ClientCertRejected, ""},
			{"client certificate expired", p.server, true, withCert(p.clientExpired), ClientCertRejected, ""},
			{"TLS to plain", nil, false, trusting, TLSToPlain, ""},
			{"plain to TLS", p.server, false, nil, PlainToTLS, ""},
			{"plain to mutual TLS", p.server, true, nil, PlainToTLS, ""},
		} {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				addr := p.serve(t, c.server, c.mutual, v.max)
				d := Dialed{Endpoint: "https://" + addr, TLS: c.client != nil, ClientCert: c.client != nil && c.client.Cert != ""}
				if !d.TLS {
					d.Endpoint = "http://" + addr
				}
				// TLS 1.3 refusals of a client certificate race the client's first write:
				// several attempts see both outcomes, and each must be explained the same.
				for range 4 {
					err := call(t, addr, c.client)
					if c.want == 0 {
						if err != nil {
							t.Fatalf("call: %v", err)
						}
						continue
					}
					got := Explain(d, err)
					var e *Error
					if !errors.As(got, &e) || e.Kind != c.want {
						t.Fatalf("Explain(%v)\n = %v, want kind %d", err, got, c.want)
					}
					if !strings.Contains(e.Detail, c.detail) {
						t.Errorf("detail %q, want %q in it", e.Detail, c.detail)
					}
					msg := got.Error()
					if !strings.HasPrefix(msg, d.Endpoint+": ") || strings.Contains(msg, "\n") {
						t.Errorf("not one line naming the endpoint: %q", msg)
					}
				}
			})
		}
	}
}

func TestExplainLeavesOtherErrorsAlone(t *testing.T) {
	p := newPKI(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	callErr := call(t, addr, &Options{CACert: p.ca.CertFile})
	if got := Explain(Dialed{Endpoint: "https://" + addr, TLS: true}, callErr); got != callErr {
		t.Errorf("connection refused became %v", got)
	}
	plain := errors.New("rpc error: code = NotFound desc = etcdserver: member not found")
	if got := Explain(Dialed{Endpoint: addr, TLS: true}, plain); got != plain {
		t.Errorf("an etcd error became %v", got)
	}
	if Explain(Dialed{}, nil) != nil {
		t.Error("nil became an error")
	}
}

func TestErrorSaysWhatToDo(t *testing.T) {
	for kind, want := range map[Kind]string{
		UnknownAuthority:   "https://10.0.0.1:2379: the server's certificate is signed by an unknown authority: pass --cacert with the CA that signed it",
		ClientCertRequired: "https://10.0.0.1:2379: the server requires a client certificate: pass --cert and --key",
		TLSToPlain:         "https://10.0.0.1:2379: the server does not speak TLS: use http://10.0.0.1:2379",
		PlainToTLS:         "https://10.0.0.1:2379: the server expects TLS: use https://10.0.0.1:2379 with --cacert (and --cert and --key if it asks for a client certificate)",
	} {
		if got := (&Error{Endpoint: "https://10.0.0.1:2379", Kind: kind}).Error(); got != want {
			t.Errorf("kind %d:\n got %s\nwant %s", kind, got, want)
		}
	}
	for k := UnknownAuthority; k <= PlainToTLS; k++ {
		if msg := (&Error{Endpoint: "e", Kind: k}).Error(); strings.Count(msg, ": ") < 2 {
			t.Errorf("kind %d says nothing to do: %q", k, msg)
		}
	}
}
