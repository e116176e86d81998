package transport

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testpki"
)

// A certificate speaks for a member whose peer URL host it covers (IP or DNS name), or for any
// member with an allowed CN; a sender without a certificate is taken as it says; a certificate
// speaks for no sender that names no URL, and for any member reached by unix socket only.
func TestVouch(t *testing.T) {
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(cn string, hosts ...string) *x509.Certificate {
		p, err := ca.Peer(cn, testpki.Hosts(hosts...))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(p.CertPEM)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	m1 := leaf("m1", "10.0.0.1", "m1.example")
	tr := New(Config{LocalID: 9, ClusterID: 7, PeerAllowedCNs: []string{"ops"}})
	for _, tt := range []struct {
		name string
		from sender
		urls []string
		ok   bool
	}{
		{"no certificate", sender{}, []string{"https://10.0.0.2:2380"}, true},
		{"covers the IP", sender{leaf: m1}, []string{"https://10.0.0.2:2380", "https://10.0.0.1:2380"}, true},
		{"covers the name", sender{leaf: m1}, []string{"https://M1.example:2380"}, true},
		{"covers another host", sender{leaf: m1}, []string{"https://10.0.0.2:2380", "https://m2.example:2380"}, false},
		{"allowed CN", sender{leaf: leaf("ops", "192.0.2.1")}, []string{"https://10.0.0.2:2380"}, true},
		{"names no URL", sender{leaf: m1}, nil, false},
		{"unix socket only", sender{leaf: m1}, []string{"unixs:///run/m2.sock"}, true},
	} {
		err := tr.vouch(tt.from, 2, tt.urls)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, errNotVouched) {
			t.Errorf("%s: %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
