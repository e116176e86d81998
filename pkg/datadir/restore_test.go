package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/storage"
)

func TestRestore(t *testing.T) {
	path, _ := snapshotFile(t)
	cfg := RestoreConfig{Snapshot: path, DataDir: filepath.Join(t.TempDir(), "x"), Name: "x",
		Initial: []Initial{{Name: "x", URLs: []string{"http://127.0.0.1:9"}}}, Token: "new"}
	r, err := Restore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state, _ := st.Load()
	old, _ := readSnapshot(path)
	if len(state.Cluster.Members) != 1 || state.Cluster.ID == old.ClusterID {
		t.Fatalf("restored: %+v", state.Cluster)
	}
	if r.MemberID != state.MemberID || r.Cluster.ID != state.Cluster.ID || r.MemberID != MemberID(cfg.Initial[0].URLs, "new") {
		t.Errorf("result %+v, stored %+v", r, state)
	}
	for id := range old.Cluster.Members {
		if !state.Cluster.IsRemoved(id) {
			t.Errorf("old member %s must be remembered as removed", id)
		}
	}
	if !reflect.DeepEqual(state.Cluster.History.Events(), oldHistory) || state.Cluster.History.Dropped() != 4 {
		t.Errorf("history after the restore: %+v, %d dropped", state.Cluster.History.Events(), state.Cluster.History.Dropped())
	}
	if snap, err := storage.SnapshotCluster(state.Snapshot); err != nil || !reflect.DeepEqual(snap.History.Events(), oldHistory) {
		t.Errorf("history in the restored member's snapshot: %v, %+v", err, snap)
	}
	for _, id := range oldRemoved {
		if !state.Cluster.IsRemoved(id) {
			t.Errorf("%s, removed from the old cluster, must be remembered as removed", id)
		}
	}
}

// TestRestoreRefusals checks each refusal's typed error, and that a refused restore writes
// nothing.
func TestRestoreRefusals(t *testing.T) {
	path, oldInitial := snapshotFile(t)
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		noFile   *NoSnapshotFileError
		notEmpty *NotEmptyError
		clash    *TokenClashError
		noName   *NameNotInClusterError
	)
	one := []Initial{{Name: "x", URLs: []string{"http://127.0.0.1:9"}}}
	tests := []struct {
		name   string
		cfg    RestoreConfig
		target any
	}{
		{"no file", RestoreConfig{Snapshot: filepath.Join(used, "missing.db"), Name: "x", Initial: one, Token: "new"}, &noFile},
		{"file is a directory", RestoreConfig{Snapshot: used, Name: "x", Initial: one, Token: "new"}, &noFile},
		{"data dir not empty", RestoreConfig{Snapshot: path, DataDir: used, Name: "x", Initial: one, Token: "new"}, &notEmpty},
		// Same peer URLs and token as the old cluster: its old members could talk to the new one.
		{"same cluster ID", RestoreConfig{Snapshot: path, Name: "a", Initial: oldInitial, Token: "old"}, &clash},
		{"name not in cluster", RestoreConfig{Snapshot: path, Name: "y", Initial: one, Token: "new"}, &noName},
	}
	for _, tt := range tests {
		if tt.cfg.DataDir == "" {
			tt.cfg.DataDir = filepath.Join(t.TempDir(), "new")
		}
		_, err := Restore(tt.cfg)
		if !errors.As(err, tt.target) {
			t.Errorf("%s: got %v (%T)", tt.name, err, err)
		}
		if tt.cfg.DataDir != used {
			if _, err := os.Stat(tt.cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: a refused restore wrote %s", tt.name, tt.cfg.DataDir)
			}
		}
	}
	if entries, _ := os.ReadDir(used); len(entries) != 1 {
		t.Errorf("a refused restore wrote into a used directory: %v", entries)
	}
}
