package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

var (
	binDir   string // clusterd and clusterctl
	buildErr error
	etcd     cluster.Etcd
	etcdErr  error
)

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithOwn(m, func(dir string, err error) {
		binDir, buildErr = dir, err
		etcd, etcdErr = cluster.BuildEtcd()
	}))
}

func needBinaries(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building clusterd and clusterctl: %v", buildErr)
	}
	if etcdErr != nil {
		t.Fatalf("building etcd: %v", etcdErr)
	}
}

const (
	waitTimeout = 30 * time.Second
	// cmdTimeout bounds one CLI run; both CLIs have their own shorter timeouts, so this only
	// catches a hang.
	cmdTimeout = 60 * time.Second
)

// startCluster bootstraps three members of the given server and waits until they are started
// and agree on a leader.
func startCluster(t *testing.T, server string) *cluster.Cluster {
	t.Helper()
	return startTLSCluster(t, server, nil)
}

// startTLSCluster is startCluster with TLS and client-certificate auth on both ports from ca
// (plain when nil), set up alike for etcd and clusterd.
func startTLSCluster(t *testing.T, server string, ca *testpki.CA) *cluster.Cluster {
	t.Helper()
	c := cluster.New(cluster.Config{
		Server: server,
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Logf:   t.Logf,
		TLS:    ca,
	})
	t.Cleanup(c.Close)
	if _, err := c.Bootstrap(3, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(2*waitTimeout, cluster.BootstrapNames(3)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	return c
}

// result is what one CLI run printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runCLI runs a CLI with a clean environment, so a developer's ETCDCTL_* or CLUSTERCTL_*
// variables cannot change what is compared.
func runCLI(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %s: %v\n%v", filepath.Base(bin), strings.Join(args, " "), err, r)
	}
	t.Logf("$ %s %s\n%v", filepath.Base(bin), strings.Join(args, " "), r)
	return r
}

// runUntil reruns the CLI while retry(result) holds, up to waitTimeout. It exists for the
// refusals that real etcd gives for a while after a start ("unhealthy cluster" for 5 s) and for
// a learner that is not yet in sync; anything else is returned at once.
func runUntil(t *testing.T, retry func(result) bool, bin string, args ...string) result {
	t.Helper()
	var r result
	err := proc.Poll(waitTimeout, "run "+strings.Join(args, " "), func() (bool, error) {
		r = runCLI(t, bin, args...)
		if retry(r) {
			return false, fmt.Errorf("%v", r)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stderrHas(s string) func(result) bool {
	return func(r result) bool { return r.code != 0 && strings.Contains(r.stderr, s) }
}

func codeIs(code int) func(result) bool {
	return func(r result) bool { return r.code == code }
}

// envBlock returns the ETCD_* lines of a `member add` output, as a file would hold them.
func envBlock(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ETCD_") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// startFromEnv starts the member from a printed environment, adding only where to listen.
func startFromEnv(t *testing.T, c *cluster.Cluster, name, block string) {
	t.Helper()
	env, err := cluster.ParseEnv(block)
	if err != nil {
		t.Fatalf("the printed environment does not parse: %v\n%s", err, block)
	}
	m, err := c.Member(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(name, m.ListenArgs(), env); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(waitTimeout, name); err != nil {
		t.Fatal(err)
	}
}

func mustID(t *testing.T, c *cluster.Cluster, name string) uint64 {
	t.Helper()
	id, err := c.ID(waitTimeout, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
