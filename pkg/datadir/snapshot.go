package datadir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

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

// SnapshotStatus is what a snapshot file holds, as snapshot status shows it: exactly one of
// Clusterd and Etcd is set, by who took the snapshot.
type SnapshotStatus struct {
	Clusterd *SnapshotInfo
	Etcd     *EtcdSnapshotInfo
}

// ReadStatus checks a snapshot file's checksum and reads what it holds, whether clusterd or etcd
// took it. A file that is not there is a *NoSnapshotFileError, a checksum that does not match
// ErrChecksum, a file whose checksum matches but holds no clusterd or etcd database a
// *SnapshotContentError. No file makes it panic.
func ReadStatus(path string) (*SnapshotStatus, error) {
	if err := checkSnapshotFile(path); err != nil {
		return nil, err
	}
	return readStatus(path)
}

// readSnapshot is ReadStatus for a clusterd snapshot, once the file is known to be there: an
// etcd snapshot is an *EtcdSnapshotError.
func readSnapshot(path string) (*SnapshotInfo, error) {
	st, err := readStatus(path)
	if err != nil {
		return nil, err
	}
	if st.Etcd != nil {
		return nil, &EtcdSnapshotError{Path: path}
	}
	return st.Clusterd, nil
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

// readStatus is ReadStatus once the file is known to be there.
func readStatus(path string) (*SnapshotStatus, error) {
	var etcd *EtcdSnapshotInfo
	st, size, sum, err := readSnapshotDB(path, func(tx *bolt.Tx) (err error) {
		etcd, err = etcdStatus(tx)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case etcd != nil:
		return &SnapshotStatus{Etcd: etcd}, nil
	}
	return &SnapshotStatus{Clusterd: &SnapshotInfo{ClusterID: st.ClusterID, MemberID: st.MemberID,
		Applied: st.Applied, Cluster: st.Cluster, Size: size, Checksum: sum}}, nil
}

// readSnapshotDB verifies a snapshot file's checksum and reads its database from a temporary
// copy: etcd's through etcd, in a read transaction (the state is then nil), or clusterd's
// member state. Errors are snapshotContentError's: without the copy's name.
func readSnapshotDB(path string, etcd func(*bolt.Tx) error) (st *storage.State, size int64, sum string, err error) {
	dir, size, sum, err := extract(path)
	if err != nil {
		return nil, 0, "", err
	}
	defer os.RemoveAll(dir)
	fromEtcd := false
	err = storage.ViewFile(filepath.Join(dir, storage.FileName), func(tx *bolt.Tx) error {
		// etcd's has its key and meta buckets; clusterd's never has a key bucket.
		if fromEtcd = tx.Bucket([]byte("key")) != nil && tx.Bucket([]byte("meta")) != nil; fromEtcd {
			return etcd(tx)
		}
		return nil
	})
	if err == nil && !fromEtcd {
		st, err = storage.LoadFile(dir)
	}
	if err != nil {
		return nil, 0, "", snapshotContentError(path, err)
	}
	return st, size, sum, nil
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
	if size = fi.Size(); size <= sha256.Size {
		return "", 0, "", ErrChecksum
	}
	tmp, err := os.MkdirTemp("", "clusterd-snapshot-")
	if err != nil {
		return "", 0, "", err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	out, err := os.Create(filepath.Join(tmp, storage.FileName))
	if err != nil {
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
		return "", 0, "", err
	}
	return tmp, size, hex.EncodeToString(want), nil
}
