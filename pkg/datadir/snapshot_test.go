package datadir

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// oldRemoved are the IDs the snapshot's cluster removed before the snapshot.
var oldRemoved = []membership.ID{0x1111, 0x2222}

// oldHistory is the membership history the snapshot holds.
var oldHistory = []membership.Event{{RaftIndex: 9, Term: 2, Change: "remove", MemberID: 0x2222, Name: "gone",
	PeerURLs: []string{"http://127.0.0.1:3"}, By: membership.Origin{CN: "root", Address: "127.0.0.1:5"}}}

// snapshotFile writes what a member streams for a snapshot: its database, then the SHA-256.
func snapshotFile(t *testing.T) (string, []Initial) {
	t.Helper()
	initial, err := ParseInitialCluster("a=http://127.0.0.1:1,b=http://127.0.0.1:2,b=http://10.0.0.2:2")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCluster(initial, "old")
	// Members the old cluster removed before the snapshot: the new one must remember them too.
	c.Removed = membership.NewIDSet(oldRemoved...)
	// And who changed it: the restored cluster keeps the history.
	c.History = membership.NewHistory(oldHistory, 4, 0)
	st, err := Create(filepath.Join(t.TempDir(), "a"), "a", c)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	if _, err := st.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	path := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, initial
}

func TestReadSnapshot(t *testing.T) {
	path, initial := snapshotFile(t)
	info, err := readSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.ClusterID != NewCluster(initial, "old").ID || len(info.Cluster.Members) != 2 || info.Applied != 1 || len(info.Checksum) != 64 {
		t.Fatalf("info: %+v", info)
	}
}

func TestSnapshotRefusesDamage(t *testing.T) {
	path, _ := snapshotFile(t)
	data, _ := os.ReadFile(path)
	truncated := filepath.Join(t.TempDir(), "t.db")
	os.WriteFile(truncated, data[:len(data)-100], 0o600)
	flipped := filepath.Join(t.TempDir(), "f.db")
	data[100] ^= 0xff
	os.WriteFile(flipped, data, 0o600)
	empty := filepath.Join(t.TempDir(), "e.db")
	os.WriteFile(empty, nil, 0o600)
	for _, p := range []string{truncated, flipped, empty} {
		if _, err := readSnapshot(p); !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
		dir := filepath.Join(t.TempDir(), "new")
		cfg := RestoreConfig{Snapshot: p, DataDir: dir, Name: "x", Initial: []Initial{{Name: "x", URLs: []string{"http://127.0.0.1:9"}}}, Token: "new"}
		if _, err := Restore(cfg); !errors.Is(err, ErrChecksum) {
			t.Errorf("restore %s: %v", filepath.Base(p), err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused restore wrote %s", dir)
		}
	}
}
