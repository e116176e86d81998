package datadir

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// etcdSnapshot was taken with etcdctl 3.7.1 snapshot save from a one-member etcd after three
// puts and one delete.
const etcdSnapshot = "testdata/etcd-3.7.1.db"

// clusterdSnapshot is a snapshot file as clusterd streams it: snapshotFile's, kept for the fuzz
// targets' seed corpus (go test ./pkg/datadir -run TestClusterdSnapshotFile -update rewrites it).
const clusterdSnapshot = "testdata/clusterd.db"

var update = flag.Bool("update", false, "rewrite testdata/clusterd.db")

func TestClusterdSnapshotFile(t *testing.T) {
	if *update {
		path, _ := snapshotFile(t)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(clusterdSnapshot, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ReadStatus(clusterdSnapshot)
	if err != nil || st.Etcd != nil || st.Clusterd == nil || len(st.Clusterd.Cluster.Members) != 2 {
		t.Fatalf("%+v %v", st, err)
	}
}

// The status of a real etcd snapshot is what etcdutl snapshot status shows for it (its output,
// in JSON: {"hash":3626235757,"revision":5,"totalKey":2,"totalSize":24576,"version":"3.7.0"}).
func TestEtcdSnapshotStatus(t *testing.T) {
	st, err := ReadStatus(etcdSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clusterd != nil || st.Etcd == nil {
		t.Fatalf("%+v", st)
	}
	want := EtcdSnapshotInfo{Hash: 3626235757, Revision: 5, TotalKey: 2, TotalSize: 24576, Version: "3.7.0"}
	if *st.Etcd != want {
		t.Errorf("got %+v\nwant %+v", *st.Etcd, want)
	}
	if _, err := readSnapshot(etcdSnapshot); !errors.As(err, new(*EtcdSnapshotError)) {
		t.Errorf("readSnapshot: %v", err)
	}
}

// Restore of an etcd snapshot is refused in one line that says what restores it, before
// anything is written.
func TestRestoreRefusesEtcdSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	_, err := Restore(restoreConfig(etcdSnapshot, dir))
	var e *EtcdSnapshotError
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	want := "snapshot file testdata/etcd-3.7.1.db was taken from etcd: clusterctl restores clusterd snapshots; restore an etcd snapshot with etcdutl snapshot restore"
	if err.Error() != want || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %q", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore wrote %s", dir)
	}
}

// A snapshot whose checksum matches but whose database is damaged (here cut to half, so its
// pages run past its end) is refused by status and by restore in one line, clusterd's and
// etcd's alike, before bbolt opens it; the file and the data directory are left alone.
func TestSnapshotRefusesDamagedDatabase(t *testing.T) {
	for _, src := range []string{clusterdSnapshot, etcdSnapshot} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		db := data[:(len(data)-sha256.Size)/2]
		sum := sha256.Sum256(db)
		path := filepath.Join(t.TempDir(), "snap.db")
		damaged := append(db[:len(db):len(db)], sum[:]...)
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		var ce *SnapshotContentError
		if _, err := ReadStatus(path); !errors.As(err, &ce) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: status: %v", src, err)
		}
		dir := filepath.Join(t.TempDir(), "new")
		cfg := RestoreConfig{Snapshot: path, DataDir: dir, Name: "x", Initial: []Initial{{Name: "x", URLs: []string{"http://127.0.0.1:9"}}}, Token: "new"}
		if _, err := Restore(cfg); !errors.As(err, &ce) {
			t.Errorf("%s: restore: %v", src, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused restore wrote %s", src, dir)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, damaged) {
			t.Errorf("%s: the snapshot file was changed", src)
		}
	}
}
