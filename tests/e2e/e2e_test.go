package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

var (
	// binDir holds clusterd and clusterctl, built once for all scripts of this run.
	binDir string
	// buildErr is why they could not be built. It fails the clusterd scripts only, so the etcd
	// scripts still check the harness while the binaries are broken or missing.
	buildErr error
)

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithOwn(m, func(dir string, err error) { binDir, buildErr = dir, err }))
}

// TestClusterd runs testdata/*.txtar against clusterd and clusterctl.
func TestClusterd(t *testing.T) {
	if buildErr != nil {
		t.Fatalf("building clusterd and clusterctl: %v", buildErr)
	}
	testscript.Run(t, params("testdata", filepath.Join(binDir, "clusterd"), binDir))
}

// TestEtcd runs testdata/etcd/*.txtar against real etcd and etcdctl 3.7.1, and clusterctl.
func TestEtcd(t *testing.T) {
	bins, err := cluster.BuildEtcd()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(bins.Etcdctl)
	if buildErr == nil {
		// clusterctl too, for the scripts that run it against etcd (its own are in testdata).
		path += string(os.PathListSeparator) + binDir
	}
	testscript.Run(t, params(filepath.Join("testdata", "etcd"), bins.Etcd, path))
}

func params(dir, server, bin string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			return setupHarness(env, server)
		},
		Cmds: commands(),
	}
}
