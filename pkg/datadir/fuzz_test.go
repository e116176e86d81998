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

// FuzzReadStatus: no snapshot file panics ReadStatus, readSnapshot (Restore's reader) or Check
// (datadir check's). Each input is tried as a whole
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
			// Restore reads the file with readSnapshot, and only writes (and syncs) after.
			if info, err := readSnapshot(path); err == nil && (st == nil || st.Clusterd == nil || info.Cluster == nil) {
				t.Fatalf("%d: readSnapshot accepts what ReadStatus does not call clusterd's: %+v", i, st)
			}
			// datadir check reads the same database, for its membership.
			if r, err := Check(path); err == nil && (r.Kind == "" || !r.Snapshot) {
				t.Fatalf("%d: check of a snapshot file: %+v", i, r)
			}
		}
	})
}

// FuzzReadWAL: no WAL file panics the WAL reader, alone or as the first of two files; what it
// reads keeps etcd's rules: consecutive entries, and a torn tail only in the last file. The
// seed is a real etcd 3.7.1 WAL.
func FuzzReadWAL(f *testing.F) {
	data, err := os.ReadFile(etcdWALFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "0000000000000000-0000000000000000.wal"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := readWAL(dir)
		if err != nil {
			return
		}
		for i := 1; i < len(w.Entries); i++ {
			if w.Entries[i].Index != w.Entries[i-1].Index+1 {
				t.Fatalf("entries %d and %d are not consecutive", w.Entries[i-1].Index, w.Entries[i].Index)
			}
		}
		w.confStateAt(w.LastIndex())
		w.termAt(w.HardState.GetCommit())
		// The same bytes as a file before another: damage there is refused, never a torn tail.
		if err := os.WriteFile(filepath.Join(dir, "0000000000000001-0000000000000001.wal"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if w2, err := readWAL(dir); err == nil && w.TornTail && !w2.TornTail {
			t.Fatal("a torn record in a file before the last was accepted")
		}
	})
}

// FuzzReadSnapFile: no .snap file panics its reader. The seed is a real etcd 3.7.1 snap file.
func FuzzReadSnapFile(f *testing.F) {
	names, err := filepath.Glob(filepath.Join(etcdDir, "member", "snap", "*.snap"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no snap file: %v", err)
	}
	data, err := os.ReadFile(names[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "0000000000000002-0000000000000009.snap"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _ = readSnapFile(dir)
	})
}
