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

// SnapshotInfo is what a snapshot file holds: the result of ReadSnapshot.
type SnapshotInfo struct {
	ClusterID membership.ID
	MemberID  membership.ID // the member it was taken from
	Applied   uint64
	Cluster   *membership.Cluster
	Size      int64  // bytes, checksum included
	Checksum  string // hex SHA-256 of the database copy
}

// ReadSnapshot checks a snapshot file's checksum and reads what it holds. A file that is not
// there is a *NoSnapshotFileError, a checksum that does not match ErrChecksum.
func ReadSnapshot(path string) (*SnapshotInfo, error) {
	if err := checkSnapshotFile(path); err != nil {
		return nil, err
	}
	return readSnapshot(path)
}

// checkSnapshotFile refuses a snapshot file that is not there or is a directory, before
// anything is read or written.
func checkSnapshotFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &NoSnapshotFileError{Path: path}
	case err != nil:
		return err
	case fi.IsDir():
		return &NoSnapshotFileError{Path: path, IsDir: true}
	}
	return nil
}

// readSnapshot is ReadSnapshot once the file is known to be there.
func readSnapshot(path string) (*SnapshotInfo, error) {
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
