package observe

import (
	"os"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

var (
	// binDir holds clusterd and clusterctl, built once for the package.
	binDir   string
	buildErr error
)

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithOwn(m, func(dir string, err error) { binDir, buildErr = dir, err }))
}

// newCluster is an empty cluster of this test's own, every member with a metrics URL.
func newCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	c := cluster.New(cluster.Config{
		Server:  binDir + "/clusterd",
		Dir:     t.TempDir(),
		Env:     []string{"PATH=" + os.Getenv("PATH")},
		Logf:    t.Logf,
		Profile: true,
	})
	t.Cleanup(c.Close)
	return c
}
