package testpki

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"testing"
)

func verify(c *x509.Certificate, roots *x509.CertPool, name string, usage x509.ExtKeyUsage) error {
	_, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func TestEachKindVerifiesAsIntended(t *testing.T) {
	for _, alg := range []Algorithm{ECDSAP256, RSA2048} {
		t.Run(alg.String(), func(t *testing.T) {
			dir := t.TempDir()
			ca, err := NewCA(dir, "ca", alg)
			if err != nil {
				t.Fatal(err)
			}
			other, err := NewCA(dir, "other-ca", alg)
			if err != nil {
				t.Fatal(err)
			}
			must := func(p *Pair, err error) *Pair {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			server := must(ca.Server("m1"))
			client := must(ca.Client("admin"))
			peer := must(ca.Peer("m1"))
			expired := must(ca.Server("m1", Expired()))
			future := must(ca.Server("m1", NotYetValid()))
			foreign := must(other.Server("m1"))
			wrong := must(ca.Server("m1", WrongHost()))
			roots := ca.Pool()

			var invalid x509.CertificateInvalidError
			var unknown x509.UnknownAuthorityError
			var host x509.HostnameError
			for _, c := range []struct {
				name  string
				p     *Pair
				host  string
				usage x509.ExtKeyUsage
				check func(error) bool
			}{
				{"server by IP", server, "127.0.0.1", x509.ExtKeyUsageServerAuth, nil},
				{"server by name", server, "localhost", x509.ExtKeyUsageServerAuth, nil},
				{"server is no client", server, "", x509.ExtKeyUsageClientAuth, func(err error) bool {
					return errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage
				}},
				{"client", client, "", x509.ExtKeyUsageClientAuth, nil},
				{"client is no server", client, "", x509.ExtKeyUsageServerAuth, func(err error) bool {
					return errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage
				}},
				{"peer as server", peer, "127.0.0.1", x509.ExtKeyUsageServerAuth, nil},
				{"peer as client", peer, "", x509.ExtKeyUsageClientAuth, nil},
				{"expired", expired, "127.0.0.1", x509.ExtKeyUsageServerAuth, func(err error) bool {
					return errors.As(err, &invalid) && invalid.Reason == x509.Expired
				}},
				{"not yet valid", future, "127.0.0.1", x509.ExtKeyUsageServerAuth, func(err error) bool {
					// crypto/x509 has one reason for both ends of the validity period.
					return errors.As(err, &invalid) && invalid.Reason == x509.Expired
				}},
				{"second CA", foreign, "127.0.0.1", x509.ExtKeyUsageServerAuth, func(err error) bool {
					return errors.As(err, &unknown)
				}},
				{"wrong host", wrong, "127.0.0.1", x509.ExtKeyUsageServerAuth, func(err error) bool {
					return errors.As(err, &host)
				}},
				{"wrong host, its own name", wrong, "wrong.invalid", x509.ExtKeyUsageServerAuth, nil},
			} {
				err := verify(c.p.Cert, roots, c.host, c.usage)
				switch {
				case c.check == nil && err != nil:
					t.Errorf("%s: %v, want it verified", c.name, err)
				case c.check != nil && (err == nil || !c.check(err)):
					t.Errorf("%s: %v, want the other refusal", c.name, err)
				}
			}
			if err := verify(foreign.Cert, other.Pool(), "localhost", x509.ExtKeyUsageServerAuth); err != nil {
				t.Errorf("second CA's own certificate: %v", err)
			}
			checkFiles(t, alg, server)
		})
	}
}

func checkFiles(t *testing.T, alg Algorithm, p *Pair) {
	t.Helper()
	st, err := os.Stat(p.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	pair, err := p.TLS()
	if err != nil {
		t.Fatal(err)
	}
	switch pair.PrivateKey.(type) {
	case *ecdsa.PrivateKey:
		if alg != ECDSAP256 {
			t.Errorf("key is ECDSA, want %v", alg)
		}
	case *rsa.PrivateKey:
		if alg != RSA2048 || pair.PrivateKey.(*rsa.PrivateKey).N.BitLen() != 2048 {
			t.Errorf("key is RSA, want %v", alg)
		}
	}
	raw, err := os.ReadFile(p.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := pem.Decode(raw); b == nil || b.Type != "CERTIFICATE" {
		t.Errorf("%s is not a PEM certificate", p.CertFile)
	}
}

func TestSameCNTwiceKeepsBothFilesAndWriteToReplaces(t *testing.T) {
	ca, err := NewCA(t.TempDir(), "ca", ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ca.Server("m1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ca.Server("m1")
	if err != nil {
		t.Fatal(err)
	}
	if a.CertFile == b.CertFile || a.KeyFile == b.KeyFile {
		t.Fatalf("second issue reused %s", a.CertFile)
	}
	if err := b.WriteTo(a.CertFile, a.KeyFile); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(a.CertFile)
	if string(got) != string(b.CertPEM) {
		t.Error("WriteTo did not replace the certificate")
	}
	if st, _ := os.Stat(a.KeyFile); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced key mode %v", st.Mode().Perm())
	}
}
