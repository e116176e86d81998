package datadir

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// FuzzParseInitialCluster: no --initial-cluster panics, and what it accepts is what the rules
// promise: every name valid, every URL valid, no address twice.
func FuzzParseInitialCluster(f *testing.F) {
	for _, s := range []string{"a=http://10.0.0.1:2380", "a=http://a:1,b=http://b:1,a=http://c:1",
		"n1=http://a:1,n1=http://a:1", "n1=http://127.0.0.1:1,n2=http://localhost:1", " a b=http://a:1",
		"=", ",", "a=", "a==http://a:1", "a=unix:///s,b=unix:///s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		initial, err := ParseInitialCluster(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--initial-cluster ") {
				t.Fatalf("%q: the error does not name the flag: %v", s, err)
			}
			return
		}
		// What is accepted keeps the rules: one member's URLs pass the one peer URL rule (two
		// names of one address allowed, one host and port twice not), no address belongs to two
		// members, and a name is empty (a member not started yet) or valid.
		owner := map[string]string{}
		for _, m := range initial {
			if err := membership.ValidatePeerURLs(m.URLs); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			for _, u := range m.URLs {
				k := membership.AddressKey(u)
				if o, ok := owner[k]; ok && o != m.Name {
					t.Fatalf("%q: address %s accepted for %q and %q", s, u, o, m.Name)
				}
				owner[k] = m.Name
			}
			if m.Name != "" {
				if err := membership.ValidateName(m.Name); err != nil {
					t.Fatalf("%q: %v", s, err)
				}
			}
		}
	})
}

// FuzzReadStatus: no snapshot file panics ReadStatus or ReadSnapshot (Restore's reader). Each input is tried as a whole
// file and, so that the fuzzer gets past the checksum to the database, as a database followed by
// its correct SHA-256. The seeds are a real clusterd snapshot and a real etcd one.
func FuzzReadStatus(f *testing.F) {
	for _, p := range []string{clusterdSnapshot, etcdSnapshot} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)-sha256.Size])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		sum := sha256.Sum256(data)
		for i, content := range [][]byte{data, append(data[:len(data):len(data)], sum[:]...)} {
			path := filepath.Join(dir, "snap.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := ReadStatus(path)
			if err == nil && (st.Clusterd == nil) == (st.Etcd == nil) {
				t.Fatalf("%d: exactly one of Clusterd and Etcd must be set: %+v", i, st)
			}
			// Restore reads the file with ReadSnapshot, and only writes (and syncs) after.
			if info, err := ReadSnapshot(path); err == nil && (st == nil || st.Clusterd == nil || info.Cluster == nil) {
				t.Fatalf("%d: ReadSnapshot accepts what ReadStatus does not call clusterd's: %+v", i, st)
			}
		}
	})
}
