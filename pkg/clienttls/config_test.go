package clienttls

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigRefusesBadFilesBeforeDialing(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// etcdctl takes every PEM block of a CA file for a certificate, and so does clusterctl.
	withKey := filepath.Join(dir, "ca-and-key.pem")
	if err := os.WriteFile(withKey, append(append([]byte{}, p.ca.CertPEM...), p.client.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"cert without key", Options{Cert: p.client.CertFile}, "--cert needs --key"},
		{"key without cert", Options{Key: p.client.KeyFile}, "--key needs --cert"},
		{"missing CA", Options{CACert: missing}, "--cacert " + missing + ": no such file or directory"},
		// Run as root, a mode cannot make a file unreadable; a directory is unreadable as a file.
		{"unreadable CA", Options{CACert: dir}, "--cacert " + dir + ": is a directory"},
		{"CA not PEM", Options{CACert: notPEM}, "--cacert " + notPEM + ": no PEM certificate in the file"},
		{"CA file holds a key", Options{CACert: p.client.KeyFile}, "--cacert " + p.client.KeyFile + ": no PEM certificate"},
		{"CA file holds a key beside the CA", Options{CACert: withKey}, "--cacert " + withKey + ": x509: "},
		{"missing cert", Options{Cert: missing, Key: p.client.KeyFile}, "--cert " + missing + ": no such file or directory"},
		{"missing key", Options{Cert: p.client.CertFile, Key: missing}, "--key " + missing + ": no such file or directory"},
		{"key file holds a certificate", Options{Cert: p.client.CertFile, Key: p.client.CertFile}, "--key " + p.client.CertFile + ": no PEM private key in the file"},
		{"cert file holds a key", Options{Cert: p.client.KeyFile, Key: p.client.KeyFile}, "--cert " + p.client.KeyFile + ": no PEM certificate in the file"},
		{"mismatched", Options{Cert: p.client.CertFile, Key: p.server.KeyFile},
			"--cert " + p.client.CertFile + " and --key " + p.server.KeyFile + " do not match: tls: private key does not match public key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := c.o.Config()
			var ae *ArgError
			if cfg != nil || !errors.As(err, &ae) {
				t.Fatalf("Config: %v, %v; want an *ArgError", cfg, err)
			}
			if !strings.HasPrefix(err.Error(), c.want) || !strings.HasPrefix(err.Error(), ae.Flag+" ") {
				t.Fatalf("Config:\n got %q\nwant %q", err, c.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	p := newPKI(t)
	cfg, err := Options{CACert: p.ca.CertFile, Cert: p.client.CertFile, Key: p.client.KeyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || cfg.InsecureSkipVerify || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("config: %+v", cfg)
	}
	cert, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil || len(cert.Certificate) == 0 {
		t.Errorf("client certificate: %v %v", cert, err)
	}
	cfg, err = Options{InsecureSkipVerify: true}.Config()
	if err != nil || !cfg.InsecureSkipVerify || cfg.RootCAs != nil || cfg.GetClientCertificate != nil {
		t.Errorf("insecure: %+v %v", cfg, err)
	}
}

// The key exchange is Go's default, the post-quantum hybrid, with a TLS 1.3 member that offers
// it (clusterd and etcd built with Go 1.24 or later), and the client certificate is presented:
// the handshake clusterctl makes for every command, measured in docs/benchmarks.md.
// GODEBUG=tlsmlkem=0 changes Go's default to X25519 alone, for clusterctl as for this test; the
// default is still what must be negotiated.
func TestConfigKeepsTheHybridKeyExchange(t *testing.T) {
	want := tls.X25519MLKEM768
	if strings.Contains(os.Getenv("GODEBUG"), "tlsmlkem=0") {
		want = tls.X25519
	}
	p := newPKI(t)
	cfg, err := Options{CACert: p.ca.CertFile, Cert: p.client.CertFile, Key: p.client.KeyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurvePreferences != nil {
		t.Errorf("CurvePreferences %v, want Go's default", cfg.CurvePreferences)
	}
	serverCert, err := p.server.TLS()
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type seen struct {
		state tls.ConnectionState
		err   error
	}
	server := make(chan seen, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			server <- seen{err: err}
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		err = tc.Handshake()
		server <- seen{tc.ConnectionState(), err}
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.ConnectionState()
	if got.Version != tls.VersionTLS13 || got.CurveID != want {
		t.Errorf("version %x, key exchange %v; want TLS 1.3 with %v", got.Version, got.CurveID, want)
	}
	// With TLS 1.3 the server checks the client certificate after the client's side of the
	// handshake has ended.
	s := <-server
	if s.err != nil || len(s.state.PeerCertificates) == 0 || s.state.PeerCertificates[0].Subject.CommonName != "root" {
		t.Errorf("server: %v, client certificates %d", s.err, len(s.state.PeerCertificates))
	}
}
