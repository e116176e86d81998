package cluster

import (
	"bytes"
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

// BuildOwn builds clusterd and clusterctl from this module into dir. The race detector is used
// when the test binary itself was built with it, so `go test -race` also covers the servers.
func BuildOwn(dir string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-tags=" + BuildTags, "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/clusterd", "./cmd/clusterctl")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
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
