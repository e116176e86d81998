//go:build !linux

package command

import (
	"os"
	"testing"
)

// makeReadOnly makes dir refuse new entries until the test ends, by its permission bits, which
// root's writes ignore: it reports false for root.
func makeReadOnly(t *testing.T, dir string) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		return false
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	return true
}
