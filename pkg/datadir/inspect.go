package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// The kinds of data directory and snapshot file the offline tools read.
const (
	KindClusterd = "clusterd"
	KindEtcd     = "etcd"
)

// DirStatus is what a stopped member's data directory holds: the result of ReadDir.
type DirStatus struct {
	Dir       string // as given
	Kind      string // KindClusterd or KindEtcd
	MemberID  membership.ID
	ClusterID membership.ID
	Name      string // the member's name in its own membership; empty if it is not there
	// Term is raft's current term (the persisted HardState's).
	Term uint64
	// LastIndex is the index of the last entry in the log, committed or not.
	LastIndex uint64
	// CommitIndex is the persisted HardState's commit index, CommitTerm the term of the entry
	// there (0 when the log no longer holds it): --force-new-cluster keeps the log up to
	// there and drops what follows.
	CommitIndex, CommitTerm uint64
	// AppliedIndex is the index the stored membership reflects (etcd: the backend's
	// consistent_index).
	AppliedIndex uint64
	// Cluster is the stored membership: the members and the removed IDs.
	Cluster *membership.Cluster
	// Tombstone says the member knows it was removed: clusterd's tombstone, or for etcd its own
	// ID among the backend's removed members.
	Tombstone bool
	// Check is the membership check of the same directory (Check).
	Check *CheckResult
}

// NotDataDirError is a path that is not a stopped member's data directory: missing, not a
// directory, or holding neither a clusterd nor an etcd member.
type NotDataDirError struct {
	Dir    string
	Reason string
}

func (e *NotDataDirError) Error() string {
	return fmt.Sprintf("%s is not a data directory: %s", e.Dir, e.Reason)
}

// InUseError is a data directory a running member holds: its database is locked for writing.
// Nothing was read, and nothing is, while it runs.
type InUseError struct{ Dir string }

func (e *InUseError) Error() string {
	return fmt.Sprintf("data directory %s is in use by a running member; stop it first", e.Dir)
}

// DamagedError is a data directory whose database, WAL or snap file cannot be read: one line
// saying which file and why.
type DamagedError struct {
	Dir string
	Err error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("data directory %s cannot be read: %v", e.Dir, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// etcd's files inside its data directory.
var (
	etcdBackendPath = filepath.Join("member", "snap", "db")
	etcdWALDir      = filepath.Join("member", "wal")
	etcdSnapDir     = filepath.Join("member", "snap")
)

// dirKind says which member's data directory dir is.
func dirKind(dir string) (string, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", &NotDataDirError{Dir: dir, Reason: "it does not exist"}
	case err != nil:
		return "", err
	case !fi.IsDir():
		return "", &NotDataDirError{Dir: dir, Reason: "it is not a directory"}
	}
	if storage.Exists(dir) {
		return KindClusterd, nil
	}
	if _, err := os.Stat(filepath.Join(dir, etcdBackendPath)); err == nil {
		return KindEtcd, nil
	}
	return "", &NotDataDirError{Dir: dir, Reason: "it holds neither clusterd's member.db nor etcd's member/snap/db"}
}

// ReadDir reads a stopped member's data directory, clusterd's or etcd's, and checks the
// membership it stores (Check). It writes nothing: bbolt is opened read-only, no lock file or
// directory is made. A directory a running member holds is an *InUseError, one that is not a
// data directory a *NotDataDirError, a damaged one a *DamagedError.
func ReadDir(dir string) (*DirStatus, error) {
	kind, err := dirKind(dir)
	if err != nil {
		return nil, err
	}
	read := readEtcdDir
	if kind == KindClusterd {
		read = readClusterdDir
	}
	st, err := read(dir)
	switch {
	case errors.Is(err, storage.ErrInUse):
		return nil, &InUseError{Dir: dir}
	case errors.Is(err, storage.ErrNotBootstrapped):
		return nil, &NotDataDirError{Dir: dir, Reason: "its database holds no member"}
	case err != nil:
		return nil, &DamagedError{Dir: dir, Err: err}
	}
	return st, nil
}

func readClusterdDir(dir string) (*DirStatus, error) {
	st, err := storage.LoadFile(dir)
	if err != nil {
		return nil, err
	}
	s := &DirStatus{Dir: dir, Kind: KindClusterd, MemberID: st.MemberID, ClusterID: st.ClusterID,
		Term: st.HardState.GetTerm(), CommitIndex: st.HardState.GetCommit(), AppliedIndex: st.Applied,
		Cluster: st.Cluster, Tombstone: st.Removed, Name: st.Name}
	if m := st.Cluster.Members[st.MemberID]; m != nil {
		s.Name = m.Name
	}
	snap := st.Snapshot.GetMetadata()
	s.LastIndex = snap.GetIndex()
	if s.CommitIndex == snap.GetIndex() {
		s.CommitTerm = snap.GetTerm()
	}
	for _, e := range st.Entries {
		s.LastIndex = max(s.LastIndex, e.GetIndex())
		if e.GetIndex() == s.CommitIndex {
			s.CommitTerm = e.GetTerm()
		}
	}
	s.Check = checkClusterd(dir, st)
	return s, nil
}

func readEtcdDir(dir string) (*DirStatus, error) {
	// The backend first: the lock a running etcd holds on it is how a running member is told.
	var b *etcdBackend
	err := storage.ViewFile(filepath.Join(dir, etcdBackendPath), func(tx *bolt.Tx) (err error) {
		b, err = readEtcdBackend(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	w, err := readWAL(filepath.Join(dir, etcdWALDir))
	if err != nil {
		return nil, err
	}
	snap, snapName, err := readSnapFile(filepath.Join(dir, etcdSnapDir))
	if err != nil {
		return nil, err
	}
	b.Cluster.ID = membership.ID(w.ClusterID)
	s := &DirStatus{Dir: dir, Kind: KindEtcd, MemberID: membership.ID(w.NodeID), ClusterID: membership.ID(w.ClusterID),
		Term: w.HardState.GetTerm(), LastIndex: w.LastIndex(), CommitIndex: w.HardState.GetCommit(),
		AppliedIndex: b.ConsistentIndex, Cluster: b.Cluster}
	s.CommitTerm, _ = w.termAt(s.CommitIndex)
	if m := b.Cluster.Members[s.MemberID]; m != nil {
		s.Name = m.Name
	}
	s.Tombstone = b.Cluster.IsRemoved(s.MemberID)
	s.Check = checkEtcd(dir, b, w, snap, snapName)
	return s, nil
}
