//go:build unix

package client

import (
	"errors"
	"os"
	"syscall"
)

// claimPart opens part for writing, held by this process alone until f is closed or the
// process ends (a kill -9 included): an exclusive flock on the file. A part whose lock is free
// was left by a save that died, and is taken over and emptied; one whose lock is held belongs to
// a save still running, and is refused with *SaveInProgressError.
func claimPart(part string) (*os.File, error) {
	// A save that ends removes or renames its part before it lets go of the lock, so a part
	// opened before that and locked after is no longer the file at that name: try again.
	for {
		f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			return nil, &SnapshotFileError{Path: part, Err: err}
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &SaveInProgressError{Part: part}
			}
			return nil, &SnapshotFileError{Path: part, Err: err}
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(part)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return nil, &SnapshotFileError{Path: part, Err: err}
			}
			return f, nil
		}
		f.Close()
		if err1 != nil {
			return nil, &SnapshotFileError{Path: part, Err: err1}
		}
	}
}
