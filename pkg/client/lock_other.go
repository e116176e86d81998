//go:build !unix

package client

import (
	"errors"
	"os"
)

// claimPart creates part, which must not exist: without flock a live save cannot be told from
// a dead one, so a part left behind is refused, naming it, for the operator to remove.
func claimPart(part string) (*os.File, error) {
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, &SaveInProgressError{Part: part}
	}
	if err != nil {
		return nil, &SnapshotFileError{Path: part, Err: err}
	}
	return f, nil
}
