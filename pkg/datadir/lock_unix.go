//go:build unix

package datadir

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on directory dir, held until unlock or the process's end (a
// kill -9 included), or refuses with *RestoreInProgressError if another process holds it.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &RestoreInProgressError{Dir: dir}
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
