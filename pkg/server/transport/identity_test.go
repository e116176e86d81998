package transport

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// A certificate speaks for a member whose peer URL host it covers (IP or DNS name), or for any
// member with an allowed CN, or with --peer-cert-allowed-hostname for any member at a host; a
// sender without a certificate is taken as it says; a certificate speaks for no sender that
// names no URL, and for a member reached by unix socket only with an allowed CN.
func TestVouch(t *testing.T) {
	leaf := leafOf(t)
	m1 := leaf("m1", "10.0.0.1", "m1.example")
	ops := leaf("ops", "192.0.2.1")
	tr := New(Config{LocalID: 9, ClusterID: 7, PeerAllowedCNs: []string{"ops"}})
	byHost := New(Config{LocalID: 9, ClusterID: 7, PeerAllowedHostnames: []string{"peers.example"}})
	for _, tt := range []struct {
		name string
		tr   *Transport
		from sender
		urls []string
		ok   bool
	}{
		{"no certificate", tr, sender{}, []string{"https://10.0.0.2:2380"}, true},
		{"no certificate, unix socket", tr, sender{}, []string{"unixs:///run/m2.sock"}, true},
		{"covers the IP", tr, sender{leaf: m1}, []string{"https://10.0.0.2:2380", "https://10.0.0.1:2380"}, true},
		{"covers the name", tr, sender{leaf: m1}, []string{"https://M1.example:2380"}, true},
		{"covers another host", tr, sender{leaf: m1}, []string{"https://10.0.0.2:2380", "https://m2.example:2380"}, false},
		{"allowed CN", tr, sender{leaf: ops}, []string{"https://10.0.0.2:2380"}, true},
		{"names no URL", tr, sender{leaf: m1}, nil, false},
		{"unix socket only", tr, sender{leaf: m1}, []string{"unixs:///run/m2.sock"}, false},
		{"unix socket named as a host", tr, sender{leaf: m1}, []string{"unixs://10.0.0.1:2380"}, false},
		{"unix socket, allowed CN", tr, sender{leaf: ops}, []string{"unixs:///run/m2.sock"}, true},
		{"allowed host name", byHost, sender{leaf: m1}, []string{"https://10.0.0.2:2380"}, true},
		{"allowed host name, unix socket", byHost, sender{leaf: m1}, []string{"unix:///run/m2.sock"}, false},
	} {
		err := tt.tr.vouch(tt.from, 2, tt.urls)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, errNotVouched) {
			t.Errorf("%s: %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// A sender the membership does not list is dialed back only at URLs with a host, and over peer
// TLS only at those its certificate speaks for: never at a unix socket it names, whoever it is.
func TestDialable(t *testing.T) {
	leaf := leafOf(t)
	m1 := leaf("m1", "10.0.0.1")
	ops := leaf("ops", "192.0.2.1")
	tr := New(Config{LocalID: 9, ClusterID: 7, PeerAllowedCNs: []string{"ops"}})
	named := []string{"https://10.0.0.1:2380", "https://10.0.0.2:2380", "unixs:///var/run/docker.sock", "unix://10.0.0.1:2380"}
	for _, tt := range []struct {
		name string
		from sender
		want []string
	}{
		{"no certificate", sender{}, named[:2]},
		{"a certificate for one host", sender{leaf: m1}, named[:1]},
		{"an allowed CN", sender{leaf: ops}, named[:2]},
	} {
		if got := tr.dialable(tt.from, named); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// leafOf issues peer certificates from a CA of its own, as parsed leaves.
func leafOf(t *testing.T) func(cn string, hosts ...string) *x509.Certificate {
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return func(cn string, hosts ...string) *x509.Certificate {
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
}
