package storage

import (
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// CorruptError is a member.db that cannot be used: empty, not a bbolt file, damaged, or a bbolt
// file without a member's buckets. Nothing was written to it, so it can still be examined.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s is empty or corrupt (%s); nothing was written to it", e.Path, e.Reason)
}

// ErrInUse is a database file another process holds for writing: a running member's.
var ErrInUse = errors.New("in use by another process")

// guard runs f, turning a panic or a memory fault inside it into an error. It is the second line
// of defence: CheckFile refuses the damaged files bbolt would fault on, some of them in goroutines
// of its own where no guard reaches.
func guard[T any](f func() (T, error)) (v T, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged database: %v", r)
		}
	}()
	return f()
}

// ViewFile runs f in a read transaction of the bbolt file at path, which may come from anywhere
// (a snapshot file, say): the file is checked (CheckFile) and opened read-only, so nothing is
// written to it, and a damaged file is a *CorruptError. bbolt's own consistency check (tx.Check,
// which etcdutl runs) is not run: CheckFile checks what it does, without bbolt's mmap.
func ViewFile(path string, f func(*bolt.Tx) error) error {
	if err := CheckFile(path); err != nil {
		return err
	}
	opts := *BoltOptions()
	opts.ReadOnly = true
	db, err := guard(func() (*bolt.DB, error) { return bolt.Open(path, 0o400, &opts) })
	if err != nil {
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	defer db.Close()
	var ferr error // f's own error, passed through as it is
	_, err = guard(func() (struct{}, error) {
		return struct{}{}, db.View(func(tx *bolt.Tx) error {
			ferr = f(tx)
			return nil
		})
	})
	if err != nil {
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	return ferr
}
