//go:build unix

package storage

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockShared takes a shared lock on f, released when f is closed, as a read-only bbolt open
// does: a file another process holds for writing changes under a reader, so it is reported as
// in use (ErrInUse) rather than read, once timeout has passed.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return ErrInUse
		}
		time.Sleep(50 * time.Millisecond)
	}
}
