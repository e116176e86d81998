package e2e

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A data directory of a development build before the first release (its member.db has no data
// format in meta, and its history other encodings) is refused in one line: clusterd exits 1
// without writing to it, datadir check exits 1 saying why, and snapshot status of a snapshot
// file of it exits 19 (docs/design.md, "Data format").
func TestOlderDataDirRefused(t *testing.T) {
	c := newCluster(t, t.TempDir(), nil)
	m, err := c.Alloc("infra0")
	if err != nil {
		t.Fatal(err)
	}
	st, err := datadir.Create(m.DataDir, "infra0", datadir.NewCluster([]datadir.Initial{{Name: "infra0", URLs: []string{m.PeerURL}}}, "old"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(m.DataDir, storage.FileName)
	dropFormat(t, db)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	const refusal = "is in data format 0, of a development build before the first release; this version reads format 1 only"

	args := append(m.BaseArgs(), "--initial-cluster=infra0="+m.PeerURL, "--initial-cluster-state=existing", "--initial-cluster-token=old")
	if err := c.Start("infra0", args, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := c.WaitExit("infra0", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.ReadFile(m.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	if last := lines[len(lines)-1]; exit.Code != 1 || !strings.HasPrefix(last, "clusterd: ") || !strings.Contains(last, refusal) {
		t.Fatalf("clusterd on an older data directory: %v, stderr:\n%s", exit, stderr)
	}
	if after, err := os.ReadFile(db); err != nil || string(after) != string(before) {
		t.Fatalf("clusterd wrote to the older data directory (%v)", err)
	}

	out, code := clusterctl(t, "datadir", "check", m.DataDir)
	if code != 1 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "Error: ") || !strings.Contains(out, refusal) {
		t.Fatalf("datadir check of an older data directory exited %d:\n%s", code, out)
	}

	// A snapshot file of it (its database, then the SHA-256) is refused as one that holds no
	// usable database.
	sum := sha256.Sum256(before)
	file := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(file, append(before, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = clusterctl(t, "snapshot", "status", file)
	if code != 19 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "holds no usable clusterd or etcd database: its database "+refusal) {
		t.Fatalf("snapshot status of an older snapshot file exited %d:\n%s", code, out)
	}
}

// dropFormat makes the member.db at path what builds before the data format wrote: no format
// key in meta (the names are stored ones, pkg/storage/storage.go).
func dropFormat(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, storage.BoltOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("format")) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
