//go:build !unix

package storage

import (
	"os"
	"time"
)

// lockShared takes no lock without flock: bbolt's own lock, taken when the file is opened,
// still keeps a second writer out.
func lockShared(*os.File, time.Duration) error { return nil }
