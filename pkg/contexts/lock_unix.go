//go:build unix

package contexts

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes the writers' lock of the contexts file at path, an exclusive flock on path+".lock"
// beside it, waiting while another writer holds it. The lock is held until unlock or the
// process's end (a kill -9 included); the lock file itself stays, empty.
func Lock(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return func() { f.Close() }, nil
}
