package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/fsync"
)

// ErrSnapshotChecksum reports a snapshot stream whose trailing SHA-256 does not match the bytes
// before it: the copy is damaged and was not kept.
var ErrSnapshotChecksum = errors.New("snapshot received is corrupt or truncated: its SHA-256 does not match")

// SnapshotResult describes a snapshot saved to a file.
type SnapshotResult struct {
	// Header is the first answer's: the cluster and the member the snapshot came from.
	Header Header
	Path   string
	// Size counts every byte of the file, the trailing checksum included, as the file holds
	// the stream exactly as etcd's clients save it.
	Size     int64
	Checksum string // hex SHA-256 of the database part
}

// SaveInProgressError reports a FILE.part that another snapshot save into the same FILE is
// writing, and still holds: nothing was sent, and that save's bytes were left alone.
type SaveInProgressError struct{ Part string }

func (e *SaveInProgressError) Error() string {
	return fmt.Sprintf("%s is being written by another snapshot save into the same file; wait for it, or stop it (a part it leaves is taken over by the next save)", e.Part)
}

// SnapshotFileError reports a local file that could not be created or written before anything
// was sent: a directory that is not there or not writable.
type SnapshotFileError struct {
	Path string
	Err  error
}

func (e *SnapshotFileError) Error() string { return fmt.Sprintf("snapshot file %s: %v", e.Path, e.Err) }
func (e *SnapshotFileError) Unwrap() error { return e.Err }

// LocalWriteError reports that writing the snapshot to this machine's disk failed once the
// stream had begun (disk full, an I/O error): the member did nothing wrong, and the part written
// was removed.
type LocalWriteError struct {
	Path string
	Err  error
}

func (e *LocalWriteError) Error() string {
	return fmt.Sprintf("writing %s failed on this machine: %v; nothing was kept", e.Path, e.Err)
}
func (e *LocalWriteError) Unwrap() error { return e.Err }

// SnapshotStreamError reports a snapshot stream that broke after bytes had arrived: the stream
// is not asked of another member then, since the copy would mix two members' databases.
type SnapshotStreamError struct {
	Endpoint string
	Received int64
	Err      error
}

func (e *SnapshotStreamError) Error() string {
	return fmt.Sprintf("snapshot from %s broke off after %d bytes: %v", e.Endpoint, e.Received, e.Err)
}

func (e *SnapshotStreamError) Unwrap() error { return e.Err }

// SaveSnapshot streams a snapshot from the first member that answers into path. It writes
// path.part beside path, checks the trailing SHA-256, syncs, renames it to path and syncs the
// directory, so path either holds a whole, checked snapshot or does not exist. On any failure,
// ctx's cancellation included, path.part is removed. A path.part that a killed save left behind
// is taken over; one another save is still writing (it holds its lock) is refused with
// *SaveInProgressError before anything is sent. An existing path is never replaced: the caller
// refuses it, and the rename does not happen when it appeared meanwhile.
func (c *Client) SaveSnapshot(ctx context.Context, path string) (res *SnapshotResult, err error) {
	part := path + ".part"
	f, err := claimPart(part)
	if err != nil {
		return nil, err
	}
	// The lock is let go only once part is renamed or removed: see claimPart.
	defer f.Close()
	defer func() {
		if err != nil {
			os.Remove(part)
		}
	}()
	if res, err = c.streamSnapshot(ctx, f); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, &LocalWriteError{Path: part, Err: err}
	}
	if _, serr := os.Lstat(path); serr == nil {
		return nil, fmt.Errorf("%s appeared while the snapshot was saved; it was left alone", path)
	}
	if err = os.Rename(part, path); err != nil {
		return nil, &LocalWriteError{Path: path, Err: err}
	}
	if err = fsync.Dir(filepath.Dir(path)); err != nil {
		// The file is whole but its name may not survive a crash: say so rather than keep it
		// silently.
		return nil, errors.Join(err, os.Remove(path))
	}
	res.Path = path
	c.fillIDs(ctx, &res.Header)
	return res, nil
}

// fillIDs fills in the cluster and member IDs of a snapshot's header when the stream left them
// out (etcd's Snapshot answers carry a header without them), from the status of the member that
// sent it, asked over the same connection. Advice only: the file is whole either way, and a
// member that does not answer, or another member answering instead, leaves the IDs as they are.
func (c *Client) fillIDs(ctx context.Context, h *Header) {
	if h.ClusterID != 0 && h.MemberID != 0 {
		return
	}
	at := c.at
	st, err := c.Status(ctx)
	if err != nil || c.at != at {
		return
	}
	h.ClusterID, h.MemberID = st.Header.ClusterID, st.Header.MemberID
}

// streamSnapshot copies the Snapshot stream into f and checks its checksum. A member that cannot
// be reached or fails before its first byte is replaced by the next endpoint, as for any read;
// once bytes have been written, a failure ends the save.
func (c *Client) streamSnapshot(ctx context.Context, f *os.File) (*SnapshotResult, error) {
	var (
		res      SnapshotResult
		sum      = &checksum{h: sha256.New()} // of the last attempt: none when the stream never started
		streamed error                        // a failure after the first byte, which call must not retry
	)
	err := c.call(ctx, true, pb.Maintenance_Snapshot_FullMethodName, func(ctx context.Context, conn *grpc.ClientConn) error {
		// The stream is abandoned on return, so its goroutines end with this context.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := pb.NewMaintenanceClient(conn).Snapshot(ctx, &pb.SnapshotRequest{})
		if err != nil {
			return err
		}
		sum = &checksum{h: sha256.New()}
		for first := true; ; first = false {
			a, err := s.Recv()
			switch {
			case err == io.EOF:
				return nil
			case err != nil && sum.n == 0:
				return err
			case err != nil:
				streamed = &SnapshotStreamError{Endpoint: c.shown(c.at), Received: sum.n, Err: err}
				return nil
			case first:
				res.Header = headerOf(a.GetHeader())
			}
			if _, werr := f.Write(a.GetBlob()); werr != nil {
				// The disk, not the member: no other endpoint is asked.
				streamed = &LocalWriteError{Path: f.Name(), Err: werr}
				return nil
			}
			sum.Write(a.GetBlob())
		}
	})
	// The member learns the deadline with the request and may end the stream on it a moment
	// before this side's context does: that is the same timeout.
	cut, _ := streamed.(*SnapshotStreamError)
	late := cut != nil && status.Code(cut.Err) == codes.DeadlineExceeded
	if _, connect := errors.AsType[*ConnectError](err); ctx.Err() != nil && !connect || late {
		// Interrupted or out of time once connected: whatever the stream said last, that is
		// the reason. Not connecting at all stays a ConnectError: nothing was received.
		cause := context.Cause(ctx)
		if late || errors.Is(cause, context.DeadlineExceeded) {
			// Out of time: a read that did not finish, named by the member it came from.
			return nil, &TimeoutError{Tried: []EndpointFailure{{Endpoint: c.shown(c.at),
				Reason: fmt.Sprintf("the snapshot stream was not complete after %d bytes", sum.n)}}}
		}
		return nil, fmt.Errorf("snapshot save interrupted: %w", cause)
	}
	if err := cmp.Or(err, streamed); err != nil {
		return nil, err
	}
	if !sum.ok() {
		return nil, ErrSnapshotChecksum
	}
	res.Size = sum.n
	res.Checksum = hex.EncodeToString(sum.tail)
	return &res, nil
}

// checksum hashes a stream except its last sha256.Size bytes, which it keeps: the stream ends
// with the SHA-256 of what precedes it, and where the database ends is known only at the end.
type checksum struct {
	h    hash.Hash
	tail []byte
	n    int64
}

func (c *checksum) Write(b []byte) {
	c.n += int64(len(b))
	c.tail = append(c.tail, b...)
	if over := len(c.tail) - sha256.Size; over > 0 {
		c.h.Write(c.tail[:over])
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
}

// ok reports whether the stream held a database followed by its SHA-256.
func (c *checksum) ok() bool {
	return c.n > sha256.Size && bytes.Equal(c.h.Sum(nil), c.tail)
}
