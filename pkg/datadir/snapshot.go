package datadir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// ErrChecksum is returned for a snapshot file that is corrupt or truncated.
var ErrChecksum = errors.New("snapshot file is corrupt or truncated: its SHA-256 does not match")

// SnapshotInfo is what a snapshot file holds.
type SnapshotInfo struct {
	ClusterID membership.ID
	MemberID  membership.ID // the member it was taken from
	Applied   uint64
	Cluster   *membership.Cluster
	Size      int64  // bytes, checksum included
	Checksum  string // hex SHA-256 of the database copy
}

// ReadSnapshot checks a snapshot file's checksum and reads what it holds.
func ReadSnapshot(path string) (*SnapshotInfo, error) {
	dir, size, sum, err := extract(path)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := storage.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot file %s: %w", path, err)
	}
	defer st.Close()
	state, err := st.Load()
	if err != nil {
		return nil, fmt.Errorf("snapshot file %s: %w", path, err)
	}
	return &SnapshotInfo{ClusterID: state.ClusterID, MemberID: state.MemberID, Applied: state.Applied,
		Cluster: state.Cluster, Size: size, Checksum: sum}, nil
}

// extract verifies the trailing checksum and writes the database part into a new temporary
// directory as a member database.
func extract(path string) (dir string, size int64, sum string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, "", err
	}
	size = fi.Size()
	if size <= sha256.Size {
		return "", 0, "", ErrChecksum
	}
	dir, err = os.MkdirTemp("", "clusterd-snapshot-")
	if err != nil {
		return "", 0, "", err
	}
	out, err := os.Create(filepath.Join(dir, storage.FileName))
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(f, size-sha256.Size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	want := make([]byte, sha256.Size)
	if err == nil {
		_, err = io.ReadFull(f, want)
	}
	if err == nil && !bytes.Equal(h.Sum(nil), want) {
		err = ErrChecksum
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, "", err
	}
	return dir, size, hex.EncodeToString(want), nil
}

// Restore builds the data directory of member name of a new cluster described by initial and
// token, from a snapshot file. The new cluster remembers every ID the old one used (its members
// and its removed IDs) as removed, so no old member can ever join it.
func Restore(path, dir, name string, initial []Initial, token string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("--data-dir %q is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--data-dir %q: %w", dir, err)
	}
	info, err := ReadSnapshot(path)
	if err != nil {
		return err
	}
	c := NewCluster(initial, token)
	if c.ID == info.ClusterID {
		// Same peer URLs and token as the old cluster: its old members could talk to the new one.
		return fmt.Errorf("--initial-cluster-token %q: the new cluster would have the old cluster's ID %s; choose another token", token, c.ID)
	}
	var removed []membership.ID
	for id := range info.Cluster.Removed.All() {
		if c.Member(id) == nil {
			removed = append(removed, id)
		}
	}
	for id := range info.Cluster.Members {
		if c.Member(id) == nil {
			removed = append(removed, id)
		}
	}
	c.Removed = membership.NewIDSet(removed...)
	st, err := Create(dir, name, c)
	if err != nil {
		return err
	}
	return st.Close()
}
