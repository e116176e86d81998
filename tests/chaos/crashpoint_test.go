package chaos

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	harness "github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/pkg/crashpoint"
)

// The released binaries carry no crash point that could be armed: without the crashpoints tag
// the package's armed file is left out of both, and the binaries make build ships hold none of
// its strings, while the test build holds them (so the check can see them).
func TestReleaseHasNoCrashPoints(t *testing.T) {
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files := func(tags string) []string {
		cmd := exec.Command("go", "list", "-deps", "-tags="+tags, "-f", "{{.ImportPath}}: {{.GoFiles}}", "./cmd/clusterctl", "./cmd/clusterd")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(l, "github.com/clusterctl/clusterctl/pkg/crashpoint: "); ok {
				return strings.Fields(strings.Trim(rest, "[]"))
			}
		}
		t.Fatalf("the binaries do not link pkg/crashpoint with -tags=%s: its calls are gone", tags)
		return nil
	}
	if got := files(harness.BuildTags); slices.Contains(got, "armed.go") || !slices.Contains(got, "disarmed.go") {
		t.Errorf("make build's tags compile pkg/crashpoint from %v", got)
	}
	if got := files(harness.BuildTags + ",crashpoints"); !slices.Contains(got, "armed.go") || slices.Contains(got, "disarmed.go") {
		t.Errorf("the crashpoints tag compiles pkg/crashpoint from %v", got)
	}

	release, tagged := t.TempDir(), t.TempDir()
	if err := (harness.Build{Dir: release, Release: true, Logf: t.Logf}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := buildTagged(tagged, false, "github.com/clusterctl/clusterctl/cmd/clusterd"); err != nil {
		t.Fatal(err)
	}
	marks := [][]byte{[]byte(crashpoint.EnvVar), []byte("crashpoint: ")}
	for _, bin := range []string{"clusterd", "clusterctl"} {
		b, err := os.ReadFile(filepath.Join(release, bin))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if bytes.Contains(b, m) {
				t.Errorf("the release %s holds %q: crash point code is compiled in", bin, m)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(tagged, "clusterd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range marks {
		if !bytes.Contains(b, m) {
			t.Errorf("the crashpoints build of clusterd lacks %q: the check above proves nothing", m)
		}
	}
}

// A restore killed before the rename of DIR.restoring leaves no DIR and a retry succeeds; one
// killed after it leaves a complete DIR that clusterd starts on. Real processes: clusterd makes
// the snapshot, clusterctl restores it with a crash point armed and dies there.
func TestRestoreCrashPoints(t *testing.T) {
	bin := t.TempDir()
	if err := buildTagged(bin, false, "github.com/clusterctl/clusterctl/cmd/clusterd", "github.com/clusterctl/clusterctl/cmd/clusterctl"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := harness.New(harness.Config{Server: filepath.Join(bin, "clusterd"), Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}, Logf: t.Logf})
	t.Cleanup(c.Close)
	ms, err := c.Bootstrap(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(30*time.Second, ms[0].Name); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap.db")
	ctl := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "clusterctl"), args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := ctl(nil, "--endpoints", ms[0].ClientAddr, "snapshot", "save", snap); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	c.Close()

	restore := func(dataDir, point string) (string, error) {
		var env []string
		if point != "" {
			env = []string{crashpoint.EnvVar + "=" + point}
		}
		return ctl(env, "snapshot", "restore", snap, "--data-dir", dataDir, "--name", "r0",
			"--initial-cluster", "r0=http://127.0.0.1:1", "--initial-advertise-peer-urls", "http://127.0.0.1:1",
			"--initial-cluster-token", "restored")
	}
	killed := func(t *testing.T, out string, err error, point string) {
		t.Helper()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !strings.Contains(out, crashLine(point)) {
			t.Fatalf("restore armed at %s: %v\n%s", point, err, out)
		}
	}
	t.Run(crashpoint.RestoreRenameBefore, func(t *testing.T) {
		dataDir := filepath.Join(dir, "before")
		out, err := restore(dataDir, crashpoint.RestoreRenameBefore)
		killed(t, out, err, crashpoint.RestoreRenameBefore)
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("killed before the rename, the restore left %s (%v)", dataDir, err)
		}
		if out, err := restore(dataDir, ""); err != nil {
			t.Fatalf("the retry: %v\n%s", err, out)
		}
		startsOn(t, bin, dataDir)
	})
	t.Run(crashpoint.RestoreRenameAfter, func(t *testing.T) {
		dataDir := filepath.Join(dir, "after")
		out, err := restore(dataDir, crashpoint.RestoreRenameAfter)
		killed(t, out, err, crashpoint.RestoreRenameAfter)
		if _, err := os.Stat(dataDir + ".restoring"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("killed after the rename, %s.restoring is still there (%v)", dataDir, err)
		}
		startsOn(t, bin, dataDir)
	})
}

// startsOn starts the restored member r0 on dataDir and waits until it answers Status as the
// leader of its one-member cluster.
func startsOn(t *testing.T, bin, dataDir string) {
	t.Helper()
	c := harness.New(harness.Config{Server: filepath.Join(bin, "clusterd"), Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}, Logf: t.Logf})
	defer c.Close()
	m, err := c.Alloc("r0")
	if err != nil {
		t.Fatal(err)
	}
	// The restore gave r0 the peer URL http://127.0.0.1:1; it listens on its own port.
	args := append(m.ListenArgs(), "--name=r0", "--data-dir="+dataDir, "--initial-advertise-peer-urls=http://127.0.0.1:1",
		"--initial-cluster=r0=http://127.0.0.1:1", "--initial-cluster-token=restored")
	if err := c.Start("r0", args, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(30*time.Second, "r0"); err != nil {
		t.Fatal(err)
	}
}
