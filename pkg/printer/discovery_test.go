package printer

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/registry"
)

func tokenStatus(t *testing.T) *TokenStatus {
	t.Helper()
	var regs []registry.Registration
	for i, kv := range [][2]string{
		{"/_etcd/registry/t1/members/96dbf27657837fe1", "infra0=http://127.0.0.1:12380"},
		{"/_etcd/registry/t1/members/763c9e70aa15678a", "infra1=http://127.0.0.1:22380,infra1=http://localhost:22380"},
		{"/_etcd/registry/t1/members/77f41cbd71028a3a", "infra0=http://127.0.0.1:42380"},
		{"/_etcd/registry/t1/members/e52329470e35c0c0", "infra2=http://127.0.0.1:32380"},
		{"/_etcd/registry/t1/members/5f1", "infra3=http://127.0.0.1:52380"},
	} {
		r, err := registry.ParseRegistration(kv[0], kv[1], int64(10+i))
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, r)
	}
	return &TokenStatus{Token: "t1", Cluster: registry.Place(3, regs)}
}

// TestDiscoveryGolden prints the discovery results in every format their rows list and compares
// them with testdata/<name>.<format>.golden (go test ./pkg/printer -update rewrites them).
func TestDiscoveryGolden(t *testing.T) {
	tests := []struct {
		name  string
		kind  Kind
		print func(Printer, *bytes.Buffer) error
	}{
		{"discovery_new", DiscoveryNew, func(p Printer, b *bytes.Buffer) error {
			return p.DiscoveryNew(b, &NewToken{Token: "4a2f0c9e1b7d4e3a8c6b5d2e1f0a9b8c", Size: 3, Endpoints: []string{"10.0.0.9:2379", "10.0.0.10:2379"}})
		}},
		// Reached over TLS: env adds the members' TLS lines, json is unchanged.
		{"discovery_new_tls", DiscoveryNew, func(p Printer, b *bytes.Buffer) error {
			return p.DiscoveryNew(b, &NewToken{Token: "4a2f0c9e1b7d4e3a8c6b5d2e1f0a9b8c", Size: 3, Endpoints: []string{"10.0.0.9:2379"},
				TLS: &clienttls.Options{CACert: "/etc/clusterd/discovery/ca.crt", Cert: "/etc/clusterd/discovery/client.crt", Key: "/etc/clusterd/discovery/client.key"}})
		}},
		{"discovery_status", DiscoveryStatus, func(p Printer, b *bytes.Buffer) error { return p.DiscoveryStatus(b, tokenStatus(t)) }},
		{"discovery_status_empty", DiscoveryStatus, func(p Printer, b *bytes.Buffer) error {
			return p.DiscoveryStatus(b, &TokenStatus{Token: "t2", Cluster: registry.Place(3, nil)})
		}},
	}
	for _, tt := range tests {
		for _, f := range kinds[tt.kind].formats {
			t.Run(tt.name+"/"+string(f), func(t *testing.T) {
				p, err := New(f)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := tt.print(p, &b); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", tt.name+"."+string(f)+".golden"), b.Bytes())
			})
		}
	}
}

func TestDiscoveryRefusesFormatsBeforeSending(t *testing.T) {
	p, _ := New(Table)
	err := p.Check(DiscoveryNew)
	if err == nil || !strings.Contains(err.Error(), `output format "table" is not supported by discovery new (supported: simple, json, env)`) {
		t.Errorf("table for discovery new: %v", err)
	}
	p, _ = New(Env)
	if err := p.DiscoveryStatus(&bytes.Buffer{}, tokenStatus(t)); err == nil {
		t.Error("env for discovery status accepted")
	}
}
