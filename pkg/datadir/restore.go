package datadir

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// RestoreConfig is the member of a new cluster that Restore builds from a snapshot file, as
// snapshot restore's flags describe it.
type RestoreConfig struct {
	Snapshot string // the snapshot file
	DataDir  string
	Name     string
	Initial  []Initial
	Token    string
}

// Restored is what Restore built: the result of a restore.
type Restored struct {
	MemberID membership.ID
	// Cluster is the new cluster: the members --initial-cluster gives, and every ID of the old
	// cluster as removed.
	Cluster *membership.Cluster
}

// Restore builds the data directory of member cfg.Name of a new cluster described by
// cfg.Initial and cfg.Token, from a snapshot file. The new cluster remembers every ID the old one
// used (its members and its removed IDs) as removed, so no old member can ever join it, and keeps
// its membership history.
//
// The checks run in the order docs/commands/snapshot-restore.md gives, each once, and all before
// the directory is created, so a refused restore writes nothing: the file is there
// (*NoSnapshotFileError), the directory is empty (*NotEmptyError), the file's checksum
// (ErrChecksum), the token (*TokenClashError), the name (*NameNotInClusterError).
func Restore(cfg RestoreConfig) (*Restored, error) {
	if err := checkSnapshotFile(cfg.Snapshot); err != nil {
		return nil, err
	}
	if err := checkEmpty(cfg.DataDir); err != nil {
		return nil, err
	}
	info, err := readSnapshot(cfg.Snapshot)
	if err != nil {
		return nil, err
	}
	c := NewCluster(cfg.Initial, cfg.Token)
	if c.ID == info.ClusterID {
		return nil, &TokenClashError{Token: cfg.Token, ClusterID: c.ID}
	}
	id, err := memberNamed(c, cfg.Name)
	if err != nil {
		return nil, err
	}
	// Every ID the old cluster used, as a member or removed, that the new one does not reuse.
	old := slices.AppendSeq(slices.Collect(info.Cluster.Removed.All()), maps.Keys(info.Cluster.Members))
	c.Removed = membership.NewIDSet(slices.DeleteFunc(old, func(id membership.ID) bool { return c.Member(id) != nil })...)
	// The membership history goes on: who changed the old cluster stays on record.
	c.History = info.Cluster.History
	if err := install(cfg.DataDir, cfg.Name, c); err != nil {
		return nil, err
	}
	return &Restored{MemberID: id, Cluster: c}, nil
}

// checkEmpty refuses a data directory that holds anything but what an interrupted restore left
// there (storage's database under construction, which storage.Create removes before it starts);
// one that does not exist is empty.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--data-dir %q: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != storage.FileName+".tmp" {
			return &NotEmptyError{Dir: dir}
		}
	}
	return nil
}
