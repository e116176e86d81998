//go:build !unix

package datadir

import "os"

// lockDir cannot tell a live restore from a dead one without flock: a directory left behind is
// refused, and the error says to remove it.
func lockDir(dir string) (unlock func(), err error) {
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		return nil, &RestoreInProgressError{Dir: dir}
	}
	return func() {}, nil
}
