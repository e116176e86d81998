package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/storage"
)

// The helper process of TestRestoreKilled: a restore that stops at one step, says so on stdout
// and waits to be killed.
func init() {
	step := os.Getenv("DATADIR_RESTORE_STOP_AT")
	if step == "" {
		return
	}
	restoreHook = func(s string) {
		if s == step {
			fmt.Println("at " + s)
			time.Sleep(time.Minute)
			os.Exit(3)
		}
	}
	_, err := Restore(restoreConfig(os.Getenv("DATADIR_RESTORE_SNAPSHOT"), os.Getenv("DATADIR_RESTORE_DIR")))
	fmt.Println("finished:", err)
	os.Exit(0)
}

func restoreConfig(snapshot, dir string) RestoreConfig {
	return RestoreConfig{Snapshot: snapshot, DataDir: dir, Name: "x",
		Initial: []Initial{{Name: "x", URLs: []string{"http://127.0.0.1:9"}}}, Token: "new"}
}

// checkRestored fails unless dir is a complete restored data directory and nothing else is
// left beside it.
func checkRestored(t *testing.T, dir string) {
	t.Helper()
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatalf("restored %s: %v", dir, err)
	}
	defer st.Close()
	if state, err := st.Load(); err != nil || state.Name != "x" || len(state.Cluster.Members) != 1 {
		t.Fatalf("restored state %+v: %v", state, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the data directory holds %v", entries)
	}
	if _, err := os.Stat(dir + restoringSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was left behind: %v", dir+restoringSuffix, err)
	}
}

// TestRestoreKilled kills a real restore process with SIGKILL after each step; what it leaves is
// either nothing clusterd would take for a member or the complete member, and a retry succeeds.
func TestRestoreKilled(t *testing.T) {
	path, _ := snapshotFile(t)
	for _, step := range []string{"claimed", "built", "renamed"} {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "member")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DATADIR_RESTORE_STOP_AT="+step,
				"DATADIR_RESTORE_SNAPSHOT="+path, "DATADIR_RESTORE_DIR="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			cmd.Process.Kill()
			cmd.Wait()
			if strings.TrimSpace(line) != "at "+step {
				t.Fatalf("the restore said %q", line)
			}
			if storage.Exists(dir) {
				// Only once the rename is done may the member be there, and then it is whole.
				if step != "renamed" {
					t.Fatalf("killed after %s, %s already holds a member", step, dir)
				}
				checkRestored(t, dir)
				return
			}
			if _, err := Restore(restoreConfig(path, dir)); err != nil {
				t.Fatalf("retry after a kill at %s: %v", step, err)
			}
			checkRestored(t, dir)
		})
	}
}

// A restore into an existing empty directory (a mount point) that was killed leaves only
// storage's member.db.tmp, which does not block the retry.
func TestRestoreInPlaceLeftover(t *testing.T) {
	path, _ := snapshotFile(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, storage.FileName+".tmp"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(restoreConfig(path, dir)); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, dir)
}

// A restore into the same directory that is still running is not disturbed: the second one is
// refused, naming the directory and what to do.
func TestRestoreInProgress(t *testing.T) {
	path, _ := snapshotFile(t)
	dir := filepath.Join(t.TempDir(), "member")
	unlock, err := claim(dir + restoringSuffix)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Restore(restoreConfig(path, dir))
	var busy *RestoreInProgressError
	if !errors.As(err, &busy) || busy.Dir != dir+restoringSuffix {
		t.Fatalf("got %v", err)
	}
	want := dir + ".restoring is in use by another snapshot restore into the same --data-dir; wait for it, or stop it and remove " + dir + ".restoring"
	if err.Error() != want {
		t.Errorf("got %q", err)
	}
	unlock()
	if _, err := Restore(restoreConfig(path, dir)); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, dir)
}
