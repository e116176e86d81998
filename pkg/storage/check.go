package storage

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
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

// checkFile refuses a database file that bbolt would rewrite or fail on, before it is opened for
// writing: bbolt turns a 0-byte file into a new empty database, which would hide what happened
// to the old one. It opens the file read-only, which writes nothing; a file another process
// holds is reported as in use.
func checkFile(dir, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return &CorruptError{Path: path, Reason: "it has 0 bytes"}
	}
	opts := *BoltOptions()
	opts.ReadOnly = true
	db, err := guard(func() (*bolt.DB, error) { return bolt.Open(path, 0o400, &opts) })
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("data directory %s is in use by another process", dir)
	}
	if err != nil {
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	return db.Close()
}

// guard runs f, turning a panic or a memory fault inside it into an error: bbolt trusts the pages
// it reads, and a damaged file must be refused, not crash the process.
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
// (a snapshot file, say): the file is opened read-only, so nothing is written to it, and an error
// opening it or a panic or fault while reading it is a *CorruptError. bbolt's own consistency
// check (tx.Check, which etcdutl runs) is not run: on a file without a synced free list it
// rebuilds the list in a goroutine of its own, where a damaged page's panic cannot be recovered
// and ends the process (the fuzz corpus holds such a file).
func ViewFile(path string, f func(*bolt.Tx) error) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return &CorruptError{Path: path, Reason: "it has 0 bytes"}
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
