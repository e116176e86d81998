package interop

// These tests start real clusterd processes with --discovery-token, against a real etcd as the
// discovery service.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/freeport"
	"github.com/clusterctl/clusterctl/tests/internal/cluster"
	"github.com/clusterctl/clusterctl/tests/internal/proc"
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

// TestClusterdBootstrapsThroughDiscovery: three clusterd members started at once with one token,
// one of them killed with SIGKILL while it waits and started again, form one cluster (same cluster
// ID and member list on all three); a fourth is refused with one line; so is a reused token.
func TestClusterdBootstrapsThroughDiscovery(t *testing.T) {
	_, ep := startDiscoveryService(t)
	token := newToken(t, ep, 3)
	c := clusterdCluster(t)
	startWithToken(t, c, "infra0", ep, token)
	ctl := filepath.Join(binDir, "clusterctl")
	if err := proc.Poll(waitTimeout, "infra0 registers", func() (bool, error) {
		return strings.Contains(runCLI(t, ctl, "--endpoints="+ep, "discovery", "status", token).stdout, "registered: 1\n"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("infra0"); err != nil {
		t.Fatal(err)
	}
	startWithToken(t, c, "infra1", ep, token)
	startWithToken(t, c, "infra2", ep, token)
	if err := c.Restart("infra0"); err != nil {
		t.Fatal(err)
	}
	names := cluster.BootstrapNames(3)
	if err := c.WaitStarted(2*waitTimeout, names...); err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, m := range c.Members() {
		r := runCLI(t, ctl, "--endpoints="+m.ClientAddr, "member", "list", "--consistency=s", "-w", "json")
		if r.code != 0 {
			t.Fatal(r)
		}
		lists = append(lists, r.stdout[strings.Index(r.stdout, `"members"`):])
		if id := mustID(t, c, m.Name); id == 0 {
			t.Fatalf("%s has no ID", m.Name)
		}
	}
	if lists[0] != lists[1] || lists[1] != lists[2] {
		t.Errorf("the members disagree:\n%s", strings.Join(lists, "\n"))
	}

	// A fourth member is refused at once with one line and writes nothing.
	startWithToken(t, c, "infra3", ep, token)
	exit, err := c.WaitExit("infra3", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Member("infra3")
	stderr, _ := os.ReadFile(m.Stderr)
	if exit.Code != 1 || !strings.Contains(string(stderr), "clusterd: discovery: cluster is full") || !strings.Contains(string(stderr), "member add") {
		t.Errorf("fourth member: %v\n%s", exit, stderr)
	}
	if _, err := os.Stat(m.DataDir + "/member.db"); err == nil {
		t.Errorf("the refused member wrote %s", m.DataDir)
	}
}

// TestClusterdDiscoveryRefusals: a token with --initial-cluster, and a discovery service that is
// down, are each one line and exit 1, quickly.
func TestClusterdDiscoveryRefusals(t *testing.T) {
	needBinaries(t)
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	c := clusterdCluster(t)
	down := fmt.Sprintf("127.0.0.1:%d", ports[0])
	tests := []struct {
		name  string
		extra []string
		line  string
	}{
		{"down", []string{"--discovery-dial-timeout=1s", "--discovery-request-timeout=1s"}, "clusterd: discovery: cannot reach the discovery service at " + down},
		{"both", []string{"--initial-cluster=both=http://127.0.0.1:1"}, `clusterd: multiple discovery or bootstrap flags are set.`},
	}
	for _, tt := range tests {
		start := time.Now()
		startWithToken(t, c, tt.name, down, "tok", tt.extra...)
		exit, err := c.WaitExit(tt.name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := c.Member(tt.name)
		stderr, _ := os.ReadFile(m.Stderr)
		// The refusal is the last line; the log may come before it.
		lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
		if exit.Code != 1 || !strings.HasPrefix(lines[len(lines)-1], tt.line) {
			t.Errorf("%s: %v after %v\n%s", tt.name, exit, time.Since(start), stderr)
		}
	}
}
