package interop

// These tests start real clusterd processes with --discovery-token, against a real etcd as the
// discovery service.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

func clusterdCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	c := cluster.New(cluster.Config{
		Server: filepath.Join(binDir, "clusterd"),
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Logf:   t.Logf,
	})
	t.Cleanup(c.Close)
	return c
}

func startWithToken(t *testing.T, c *cluster.Cluster, name, ep, token string, extra ...string) {
	t.Helper()
	m, err := c.Alloc(name)
	if err != nil {
		t.Fatal(err)
	}
	args := append(m.BaseArgs(), "--initial-cluster-state=new", "--discovery-token="+token, "--discovery-endpoints="+ep)
	if err := c.Start(name, append(args, extra...), nil); err != nil {
		t.Fatal(err)
	}
}

// refusal waits for the member's process to exit and returns how it ended, the line it refused
// with (the last line of its stderr, and the only one of its own: the log comes before it) and
// its whole stderr.
func refusal(t *testing.T, c *cluster.Cluster, name string) (exit proc.Exit, line, stderr string) {
	t.Helper()
	exit, err := c.WaitExit(name, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Member(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(m.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	own := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "clusterd: ") {
			own++
		}
	}
	if own != 1 || !strings.HasPrefix(last, "clusterd: ") {
		t.Errorf("%s did not end with one line of its own:\n%s", name, b)
	}
	return exit, last, string(b)
}

// nothingWritten fails unless the member's data directory is absent or empty.
func nothingWritten(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	m, err := c.Member(name)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(m.DataDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the refused member %s wrote %s", name, filepath.Join(m.DataDir, e.Name()))
	}
}

// TestClusterdBootstrapsThroughDiscovery, over a plain and a TLS discovery service: three clusterd
// members started at once with one token, one of them killed with SIGKILL while it waits and
// started again, form one cluster (same cluster ID and member list on all three), the one started
// again from its own registration; a fourth is refused with one line that says to add it with
// member add, and doing so works.
func TestClusterdBootstrapsThroughDiscovery(t *testing.T) {
	t.Parallel()
	for _, scheme := range discoverySchemes {
		t.Run(scheme, func(t *testing.T) {
			d := startDiscoveryService(t, scheme)
			token := d.newToken(t, 3)
			c := clusterdCluster(t)
			start := func(name string) { startWithToken(t, c, name, d.addr, token, d.memberFlags()...) }

			start("infra0")
			d.waitRegistered(t, token, 1)
			if err := c.Kill("infra0"); err != nil {
				t.Fatal(err)
			}
			start("infra1")
			start("infra2")
			if err := c.Restart("infra0"); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitStarted(2*waitTimeout, cluster.BootstrapNames(3)...); err != nil {
				t.Fatal(err)
			}
			sameMembers(t, c)
			m, _ := c.Member("infra0")
			if log, _ := os.ReadFile(m.Stderr); !strings.Contains(string(log), "found this member's own registration") {
				t.Errorf("infra0 started again did not go on from its own registration:\n%s", log)
			}
			// Registered once each: the restart wrote no second registration.
			st := d.ctl(t).run("discovery", "status", token)
			if st.code != 0 || !strings.Contains(st.stdout, "size: 3\nregistered: 3\n") || strings.Count(st.stdout, "\n") != 6 {
				t.Errorf("status: %v", st)
			}

			// A fourth member is refused at once with one line and writes nothing.
			start("infra3")
			exit, line, _ := refusal(t, c, "infra3")
			if exit.Code != 1 || !strings.HasPrefix(line, "clusterd: discovery: cluster is full") || !strings.Contains(line, "clusterctl member add") {
				t.Errorf("fourth member: %v: %s", exit, line)
			}
			nothingWritten(t, c, "infra3")
			// What the line says to do: member add, then a start with the printed environment.
			m3, _ := c.Member("infra3")
			eps := cluster.Endpoints(c.Running())
			r := runUntil(t, codeIs(12), filepath.Join(binDir, "clusterctl"), "--endpoints="+eps, "member", "add", "infra3", "--peer-urls="+m3.PeerURL)
			if r.code != 0 {
				t.Fatalf("member add: %v", r)
			}
			startFromEnv(t, c, "infra3", envBlock(r.stdout))
		})
	}
}

// TestClusterdDiscoveryServiceDown, over a plain and a TLS discovery service that stopped after
// the token was made: the member is refused with one line within about the dial timeout (2 s by
// default), and writes nothing.
func TestClusterdDiscoveryServiceDown(t *testing.T) {
	t.Parallel()
	for _, scheme := range discoverySchemes {
		t.Run(scheme, func(t *testing.T) {
			d := startDiscoveryService(t, scheme)
			token := d.newToken(t, 3)
			if err := d.c.StopAll(waitTimeout); err != nil {
				t.Fatal(err)
			}
			c := clusterdCluster(t)
			start := time.Now()
			startWithToken(t, c, "infra0", d.addr, token, d.memberFlags()...)
			exit, line, _ := refusal(t, c, "infra0")
			took := time.Since(start)
			if exit.Code != 1 || !strings.HasPrefix(line, "clusterd: discovery: cannot reach the discovery service at "+d.addr+" within 2s") {
				t.Errorf("%v: %s", exit, line)
			}
			// The dial timeout, and the start and exit of a process on a loaded machine.
			if took > 5*time.Second {
				t.Errorf("the refusal took %v", took)
			}
			t.Logf("refused after %v: %s", took, line)
			nothingWritten(t, c, "infra0")
		})
	}
}

// TestClusterdDiscoveryRefusals: a token with --initial-cluster is one line and exit 1, before
// anything is asked of the discovery service.
func TestClusterdDiscoveryRefusals(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	c := clusterdCluster(t)
	startWithToken(t, c, "both", fmt.Sprintf("127.0.0.1:%d", ports[0]), "tok", "--initial-cluster=both=http://127.0.0.1:1")
	exit, line, _ := refusal(t, c, "both")
	if exit.Code != 1 || !strings.HasPrefix(line, `clusterd: multiple discovery or bootstrap flags are set.`) {
		t.Errorf("%v: %s", exit, line)
	}
	nothingWritten(t, c, "both")
}
