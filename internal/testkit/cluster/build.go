package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ModuleRoot returns the directory of this module's go.mod, found from the working directory,
// which go test sets to the package directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	// A module is at most a few dozen directories deep; the bound stops a walk that found no
	// go.mod at the file-system root.
	for range 64 {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/clusterctl/clusterctl\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("go.mod of github.com/clusterctl/clusterctl not found above the working directory")
}

// BuildTags are the build tags `make build` builds the binaries with (TAGS in the Makefile),
// so that the tests run the binaries as they ship.
const BuildTags = "grpcnotrace"

// Build says what to build from this module and how; Run builds it.
type Build struct {
	// Dir receives the binaries, each named after its package's directory.
	Dir string
	// Packages are relative to the module root; none means ./cmd/clusterd and ./cmd/clusterctl.
	Packages []string
	// Release builds the binaries as `make build` ships them (BUILD in the Makefile:
	// CGO_ENABLED=0, -trimpath, -ldflags=-s -w), for measuring them. Otherwise they are built for
	// testing, with the race detector when the test binary itself was built with it, so that
	// `go test -race` also covers the servers.
	Release bool
	// Logf, if set, is told the go command before it runs.
	Logf func(format string, args ...any)
}

// Run builds the packages with BuildTags into Dir, in one go command.
func (b Build) Run(ctx context.Context) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-tags=" + BuildTags}
	var env []string
	switch {
	case b.Release:
		args = append(args, "-trimpath", "-ldflags=-s -w")
		env = append(env, "CGO_ENABLED=0")
	case raceEnabled:
		args = append(args, "-race")
	}
	args = append(args, "-o", b.Dir+string(filepath.Separator))
	pkgs := b.Packages
	if len(pkgs) == 0 {
		pkgs = []string{"./cmd/clusterd", "./cmd/clusterctl"}
	}
	args = append(args, pkgs...)
	if b.Logf != nil {
		b.Logf("%s", strings.TrimSpace(strings.Join(env, " ")+" go "+strings.Join(args, " ")))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// BuildOwn builds clusterd and clusterctl for testing into dir.
func BuildOwn(dir string) error {
	return Build{Dir: dir}.Run(context.Background())
}

// MainWithOwn is a TestMain body: it builds clusterd and clusterctl into a temporary directory,
// hands got where they are (or why they could not be built, which only the tests that need
// them should report), runs the tests and removes the directory.
func MainWithOwn(m *testing.M, got func(dir string, err error)) int {
	dir, err := os.MkdirTemp("", "clusterctl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	got(dir, BuildOwn(dir))
	return m.Run()
}

// Etcd holds the paths of the real etcd binaries.
type Etcd struct {
	Etcd, Etcdctl string
}

var (
	etcdOnce sync.Once
	etcdBins Etcd
	etcdErr  error
)

// BuildEtcd returns etcd and etcdctl 3.7.1, built by scripts/build-etcd.sh into its cache on the
// first call on a machine (a few minutes with a cold Go build cache) and found there afterwards.
// The script serialises concurrent builds, so test binaries running in parallel may all call it.
func BuildEtcd() (Etcd, error) {
	etcdOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			etcdErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "build-etcd.sh"))
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			etcdErr = fmt.Errorf("scripts/build-etcd.sh: %v\n%s", err, stderr.String())
			return
		}
		lines := strings.Fields(string(out))
		if len(lines) != 2 {
			etcdErr = fmt.Errorf("scripts/build-etcd.sh printed %q, want two paths", out)
			return
		}
		etcdBins = Etcd{Etcd: lines[0], Etcdctl: lines[1]}
	})
	return etcdBins, etcdErr
}
