package datadir

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// The errors of offline work. Each is typed so that a caller decides what it means (clusterctl
// maps each to an exit code in one table) without matching text; the messages are what users
// and the docs see, so they change only on purpose.

// ErrChecksum is returned for a snapshot file that is corrupt or truncated.
var ErrChecksum = errors.New("snapshot file is corrupt or truncated: its SHA-256 does not match")

// NoSnapshotFileError is a snapshot file that is not there, or is a directory: nothing was read.
type NoSnapshotFileError struct {
	Path  string
	IsDir bool
}

func (e *NoSnapshotFileError) Error() string {
	if e.IsDir {
		return fmt.Sprintf("snapshot file %s is a directory", e.Path)
	}
	return fmt.Sprintf("snapshot file %s does not exist", e.Path)
}

// NotEmptyError is the data directory of a new member that already holds something: it may be
// another member's, so nothing is written into it.
type NotEmptyError struct{ Dir string }

func (e *NotEmptyError) Error() string { return fmt.Sprintf("--data-dir %q is not empty", e.Dir) }

// TokenClashError is a restore whose new cluster would get the old cluster's ID (the same peer
// URLs and token): the old members could then talk to the new cluster.
type TokenClashError struct {
	Token     string
	ClusterID membership.ID
}

func (e *TokenClashError) Error() string {
	return fmt.Sprintf("--initial-cluster-token %q: the new cluster would have the old cluster's ID %s; choose another token", e.Token, e.ClusterID)
}

// NameNotInClusterError is a member name that --initial-cluster does not list. The message is
// etcd's, which runbooks grep for.
type NameNotInClusterError struct{ Name string }

func (e *NameNotInClusterError) Error() string {
	return fmt.Sprintf("couldn't find local name %q in the initial cluster configuration", e.Name)
}

// PeerURLsMismatchError is a member whose --initial-advertise-peer-urls are not the URLs
// --initial-cluster gives it: the other members would derive another ID for it.
type PeerURLsMismatchError struct {
	Name       string
	Initial    []string // the member's URLs in --initial-cluster
	Advertised []string // --initial-advertise-peer-urls
}

func (e *PeerURLsMismatchError) Error() string {
	// The member's entries in --initial-cluster's own syntax, so a URL list cannot be misread as
	// more members.
	entries := make([]string, len(e.Initial))
	for i, u := range e.Initial {
		entries[i] = e.Name + "=" + u
	}
	return fmt.Sprintf("--initial-cluster has %s but --initial-advertise-peer-urls is %s",
		strings.Join(entries, ","), strings.Join(e.Advertised, ","))
}

// RestoreInProgressError is the directory another restore into the same data directory is
// building in, and still holds.
type RestoreInProgressError struct{ Dir string }

func (e *RestoreInProgressError) Error() string {
	return fmt.Sprintf("%s is in use by another snapshot restore into the same --data-dir; wait for it, or stop it and remove %s", e.Dir, e.Dir)
}

// SnapshotContentError is a snapshot file whose checksum matches but whose database is not a
// clusterd or an etcd one, or is damaged: nothing in it is used.
type SnapshotContentError struct {
	Path   string
	Reason string
}

func (e *SnapshotContentError) Error() string {
	return fmt.Sprintf("snapshot file %s holds no usable clusterd or etcd database: %s", e.Path, e.Reason)
}

// snapshotContentError reports err, met reading the database of snapshot file path from a
// temporary copy, without the copy's name.
func snapshotContentError(path string, err error) error {
	if ce, ok := errors.AsType[*storage.CorruptError](err); ok {
		return &SnapshotContentError{Path: path, Reason: ce.Reason}
	}
	if fe, ok := errors.AsType[*storage.FormatError](err); ok {
		return &SnapshotContentError{Path: path, Reason: "its database " + fe.Reason()}
	}
	if errors.Is(err, storage.ErrNotBootstrapped) {
		return &SnapshotContentError{Path: path, Reason: "it has no member's meta bucket"}
	}
	return fmt.Errorf("snapshot file %s: %w", path, err)
}
