package command

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h, which x/sys/unix does not name.
const fsImmutable = 0x10

// makeReadOnly makes dir refuse new entries until the test ends, root included: the permission
// bits for a user, the immutable attribute (FS_IMMUTABLE_FL, chattr +i) for root, whom the bits
// do not stop. It reports false where the filesystem has no such attribute.
func makeReadOnly(t *testing.T, dir string) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return true
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return false
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsImmutable)); err != nil {
		return false
	}
	t.Cleanup(func() {
		if g, err := os.Open(dir); err == nil {
			unix.IoctlSetPointerInt(int(g.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
			g.Close()
		}
	})
	return true
}
