package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clusterctl/clusterctl/pkg/crashpoint"
	"github.com/clusterctl/clusterctl/pkg/fsync"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A restore never leaves a half-built data directory where clusterd would find it, and nothing it
// leaves behind blocks a retry:
//   - DIR does not exist: the member is built in DIR.restoring beside it, which is synced and
//     then renamed to DIR, and the parent synced. Killed before the rename, only DIR.restoring
//     is left; the next restore finds it unlocked (its builder is gone: the lock dies with the
//     process), empties it and carries on. Killed after, DIR is complete.
//   - DIR exists and is empty (a mount point, say, which cannot be renamed over): storage.Create
//     builds member.db.tmp inside it and renames it to member.db. Killed before that rename, DIR
//     holds only member.db.tmp, which checkEmpty does not count and Create replaces.

// restoringSuffix names the directory a restore builds in, beside the data directory.
const restoringSuffix = ".restoring"

// restoreHook, when set (by tests only), is called after each step of install, so that a test
// can stop or kill the process at that point.
var restoreHook func(step string)

func hook(step string) {
	if restoreHook != nil {
		restoreHook(step)
	}
}

// install writes member name's data directory for cluster c at dir, atomically as above.
func install(dir, name string, c *membership.Cluster) error {
	if _, err := os.Stat(dir); err == nil {
		st, err := Create(dir, name, c)
		if err != nil {
			return err
		}
		return st.Close()
	}
	tmp := filepath.Clean(dir) + restoringSuffix
	unlock, err := claim(tmp)
	if err != nil {
		return err
	}
	defer unlock()
	hook("claimed")
	st, err := Create(tmp, name, c)
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	hook("built")
	crashpoint.Hit(crashpoint.RestoreRenameBefore)
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.RestoreRenameAfter)
	hook("renamed")
	return fsync.Dir(filepath.Dir(tmp))
}

// claim makes tmp an empty directory held by this process. A tmp left by a restore that died is
// emptied; one whose restore still runs is refused (*RestoreInProgressError).
func claim(tmp string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(tmp), 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	unlock, err = lockDir(tmp)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		unlock()
		return nil, err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			unlock()
			return nil, fmt.Errorf("removing %s, left by an interrupted restore: %w", filepath.Join(tmp, e.Name()), err)
		}
	}
	return unlock, nil
}
