package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fullDiskRoom is the room a member's tmpfs has beyond its data when it is mounted: enough for
// the member to start and write for a moment, small enough to fill at once.
const fullDiskRoom = 4 << 20

// mountProbe tries a size-limited tmpfs mount in dir; "" when mounting works, otherwise why the
// full-disk fault cannot run (it is then left out, and the run says so).
func mountProbe(dir string) string {
	mnt := filepath.Join(dir, "mount-probe")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return err.Error()
	}
	defer os.Remove(mnt)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		return fmt.Sprintf("mount -t tmpfs is not permitted here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		return fmt.Sprintf("umount: %v: %s", err, out)
	}
	return ""
}

// mountTmpfs puts dataDir's files on a tmpfs of their size plus room, mounted at dataDir itself,
// so that every path the member uses stays the same. The member must not be running.
func (c *cluster) mountTmpfs(dataDir string, room int64) error {
	aside := dataDir + ".aside"
	if err := os.Rename(dataDir, aside); err != nil {
		return err
	}
	used, err := dirSize(aside)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		return err
	}
	size := (used + room + 4095) / 4096 * 4096
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dataDir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount: %v: %s", err, out)
	}
	c.mu.Lock()
	c.mounts[dataDir] = true
	c.mu.Unlock()
	if out, err := exec.Command("cp", "-a", aside+"/.", dataDir+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("cp: %v: %s", err, out)
	}
	return os.RemoveAll(aside)
}

// unmountTmpfs copies dataDir's files back to the disk and unmounts its tmpfs. The member must
// not be running.
func (c *cluster) unmountTmpfs(dataDir string) error {
	aside := dataDir + ".aside"
	if err := os.Mkdir(aside, 0o700); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", dataDir+"/.", aside+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("cp: %v: %s", err, out)
	}
	if err := unmount(dataDir); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.mounts, dataDir)
	c.mu.Unlock()
	if err := os.Remove(dataDir); err != nil {
		return err
	}
	return os.Rename(aside, dataDir)
}

// unmount unmounts dir, lazily if something still holds it (the end of a failed run).
func unmount(dir string) error {
	if err := exec.Command("umount", dir).Run(); err == nil {
		return nil
	}
	if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("umount -l %s: %v: %s", dir, err, out)
	}
	return nil
}

// unmountAll removes every mount the run made; close calls it after every process ended.
func (c *cluster) unmountAll() {
	c.mu.Lock()
	var dirs []string
	for d := range c.mounts {
		dirs = append(dirs, d)
	}
	c.mounts = map[string]bool{}
	c.mu.Unlock()
	for _, d := range dirs {
		if err := unmount(d); err != nil {
			c.logf("%v", err)
		}
	}
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// fill writes a filler file into dir until the filesystem is full.
func fill(dir string) (string, error) {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		return path, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for range 1 << 14 { // 1 GiB at most: a tmpfs that takes more was not size-limited
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path, nil
			}
			return path, err
		}
	}
	return path, fmt.Errorf("%s took 1 GiB without filling up", dir)
}

// checkBolt opens a member's database read-only and checks every page: nothing half-written.
func checkBolt(dataDir string) error {
	db, err := bolt.Open(filepath.Join(dataDir, "member.db"), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// fullDisk puts a follower's data dir on a small tmpfs, restarts it there, fills the tmpfs up
// while the clients (and the fault itself) make entries, and expects the member to stop by
// itself with one line naming the full disk and a database that checks clean; then frees the
// space, restarts it, lets it catch up, moves it back to the disk and runs the came-back check.
func (f *injector) fullDisk(ctx context.Context, sn snapshot) bool {
	if sn.view == nil {
		return false
	}
	idx, lead := f.followerOf(sn, true), f.leaderSlot(sn)
	if idx < 0 || lead < 0 {
		return false
	}
	h, ok := f.holdMember(ctx, idx)
	if !ok {
		return false
	}
	c := f.c
	dataDir := c.dataDirOf(idx)
	if !exists(dataDir) {
		// A member still in its phase two, with no data dir yet: nothing to move.
		c.release(idx, false)
		return false
	}
	h.p.kill()
	if err := c.mountTmpfs(dataDir, fullDiskRoom); err != nil {
		c.fail("full disk: putting %s on a tmpfs: %v", dataDir, err)
		return true
	}
	defer func() {
		if err := c.unmountTmpfs(dataDir); err != nil {
			c.fail("full disk: moving %s back to the disk: %v", dataDir, err)
			return
		}
		f.comeBack(ctx, h)
	}()
	p := c.restartHeld(idx, nil)
	if p == nil {
		return true
	}
	f.waitApplied(ctx, c.clientAddr(idx), 1, 10*time.Second)
	filler, err := fill(dataDir)
	if err != nil {
		c.fail("full disk: filling %s: %v", dataDir, err)
	}
	c.events.add("slot %d: %s's data dir is full", idx, p.name)
	// Entries of the fault's own, so that the member has something to write at once.
	addr := c.clientAddr(lead)
	f.driveUntil(ctx, h.id, addr, p.done, 15*time.Second)
	f.judgeFullDisk(p)
	if p.exited() {
		os.Remove(filler)
	} else {
		p.kill()
		os.Remove(filler)
	}
	if err := checkBolt(dataDir); err != nil {
		c.fail("full disk: %s's database after the disk filled up: %v", p.name, err)
	} else {
		c.countStat("full disk: the database checks clean")
	}
	// Space freed: it restarts on its data and catches up.
	again := c.restartHeld(idx, nil)
	if again == nil {
		return true
	}
	target := uint64(0)
	if st, err := memberStatus(ctx, addr, time.Second); err == nil {
		target = st.GetRaftAppliedIndex()
	}
	if f.waitApplied(ctx, c.clientAddr(idx), target, 20*time.Second) {
		c.countStat("full disk: caught up after the space was freed")
	} else if code, own := again.ownExit(); again.exited() && own && code == 3 {
		c.countStat("full disk: removed meanwhile (exit 3)")
	} else if again.exited() {
		c.countStat("full disk: not caught up within 20s of the space freed")
		c.logf("full disk: %s ended again with %s; its log ends:\n%s", again.name, again.status(), again.logTail(5))
	} else {
		c.countStat("full disk: not caught up within 20s of the space freed")
		again.quit(5 * time.Second)
		c.logf("full disk: %s ran but did not reach index %d; its goroutines:\n%s", again.name, target, again.ownGoroutines())
	}
	again.kill()
	return true
}

// judgeFullDisk checks how a member whose disk filled up stopped: by itself, not 0, with one
// line that names the full disk as its last.
func (f *injector) judgeFullDisk(p *process) {
	if !p.exited() {
		f.c.countStat("full disk: still running 15s after its disk filled up")
		return
	}
	code, own := p.ownExit()
	lines := strings.Split(strings.TrimRight(p.ownLog(), "\n"), "\n")
	last := lines[len(lines)-1]
	switch {
	case !own || code == 3:
		f.c.countStat("full disk: ended otherwise (killed or removed)")
	case code == 0 || !strings.Contains(last, "no space left on device") || !strings.HasPrefix(last, "clusterd: "):
		f.c.fail("full disk: %s stopped with %s; its log ends:\n%s", p.name, p.status(), p.logTail(5))
	default:
		f.c.countStat("full disk: stopped with one line")
	}
}

// driveUntil moves member id between its slot's peer URLs through addr, as driveApplied does,
// until done is closed or within passes: entries for every member to write.
func (f *injector) driveUntil(ctx context.Context, id uint64, addr string, done <-chan struct{}, within time.Duration) {
	urls, cur, ok := f.slotURLs(id)
	deadline := time.Now().Add(within)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		select {
		case <-done:
			return
		default:
		}
		if ok {
			out, _, sent := f.rec.do(ctx, f.client, addr, input{Kind: opUpdate, ID: id, URL: urls[1-cur]}, 2*time.Second)
			switch {
			case sent && !out.Unknown && out.Err == "":
				cur = 1 - cur
			case sent && (out.Unknown || out.Err == errNotFound):
				ok = false
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// dataDirOf is slot idx's data dir.
func (c *cluster) dataDirOf(idx int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[idx].dataDir
}
