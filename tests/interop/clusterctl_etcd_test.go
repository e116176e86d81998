package interop

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/tests/internal/cluster"
)

// TestClusterctlManagesEtcd drives a real etcd 3.7.1 cluster with clusterctl through the seeds'
// walk-through: list, add a learner, start it from the printed environment, promote it, update
// its peer URLs, remove it.
func TestClusterctlManagesEtcd(t *testing.T) {
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members())

	// list: etcd's members in clusterctl's format, IDs as 16 hex digits
	r := runCLI(t, ctl, ep, "member", "list")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("member list: %v", r)
	}
	for _, m := range c.Members() {
		want := fmt.Sprintf("%016x, started, %s, %s, %s, false", mustID(t, c, m.Name), m.Name, m.PeerURL, m.ClientURL())
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("member list lacks the line %q", want)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n != 3 {
		t.Errorf("member list printed %d lines, want 3", n)
	}
	r = runCLI(t, ctl, ep, "member", "list", "-w", "json")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%q", fmt.Sprintf("%016x", mustID(t, c, "infra0")))) {
		t.Errorf("member list -w json: want the IDs as hex strings: %v", r)
	}

	// add a learner; etcd refuses changes for 5 s after start-up (exit 12, unhealthy cluster)
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	r = runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner")
	if r.code != 0 {
		t.Fatalf("member add --learner: %v", r)
	}
	id := mustID(t, c, "infra3")
	hex := fmt.Sprintf("%016x", id)
	if !regexp.MustCompile(`\AMember ` + hex + ` added as learner to cluster [0-9a-f]{16}\n\nETCD_NAME="infra3"\n`).MatchString(r.stdout) {
		t.Errorf("member add --learner output:\n%s", r.stdout)
	}
	block := envBlock(r.stdout)
	for _, m := range c.Members() {
		if !strings.Contains(block, m.Name+"="+m.PeerURL) {
			t.Errorf("ETCD_INITIAL_CLUSTER lacks %s=%s:\n%s", m.Name, m.PeerURL, block)
		}
	}

	// real etcd reads the ETCD_* variables that clusterctl printed
	startFromEnv(t, c, "infra3", block)
	r = runCLI(t, ctl, ep, "member", "list")
	if want := fmt.Sprintf("%s, started, infra3, %s, %s, true\n", hex, m3.PeerURL, m3.ClientURL()); !strings.Contains(r.stdout, want) {
		t.Errorf("after the learner started, member list lacks %q:\n%s", want, r.stdout)
	}

	// promote: "not in sync" (13) until the learner has caught up
	r = runUntil(t, codeIs(13), ctl, ep, "member", "promote", hex)
	if want := fmt.Sprintf("Member %s promoted in cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member promote: %v", r)
	}

	// update: add an alias URL for the same listener, so the member keeps working
	alias := "http://localhost:" + m3.PeerURL[strings.LastIndex(m3.PeerURL, ":")+1:]
	r = runUntil(t, codeIs(12), ctl, ep, "member", "update", hex, "--peer-urls="+m3.PeerURL+","+alias)
	if want := fmt.Sprintf("Member %s updated in cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member update: %v", r)
	}
	r = runCLI(t, ctl, ep, "member", "list")
	if want := fmt.Sprintf("%s, started, infra3, %s,%s, %s, false\n", hex, m3.PeerURL, alias, m3.ClientURL()); !strings.Contains(r.stdout, want) {
		t.Errorf("after the update, member list lacks %q:\n%s", want, r.stdout)
	}

	// remove by name; etcd's removed member stops by itself with status 0
	r = runUntil(t, codeIs(12), ctl, ep, "member", "remove", "infra3")
	if want := fmt.Sprintf("Member %s removed from cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member remove: %v", r)
	}
	e, err := c.WaitExit("infra3", waitTimeout)
	if err != nil || e.Code != 0 {
		t.Errorf("removed etcd member: %v %v, want exit status 0 (etcd's behaviour)", e, err)
	}
	r = runCLI(t, ctl, ep, "member", "list")
	if strings.Contains(r.stdout, "infra3") || strings.Count(r.stdout, ", started, ") != 3 {
		t.Errorf("after the removal:\n%s", r.stdout)
	}

	// the server's errors map to clusterctl's codes against etcd too
	r = runCLI(t, ctl, ep, "member", "remove", "00000000000000ff")
	if r.code != 10 || r.stderr != "Error: etcdserver: member not found\n" {
		t.Errorf("remove of an unknown ID: %v; want exit 10 and the one line", r)
	}
	r = runCLI(t, ctl, ep, "member", "promote", fmt.Sprintf("%016x", mustID(t, c, "infra0")))
	if r.code != 1 || r.stderr != "Error: etcdserver: can only promote a learner member\n" {
		t.Errorf("promote of a voter: %v; want exit 1 and the one line", r)
	}
	r = runCLI(t, ctl, ep, "member", "add", "infra9", "--peer-urls="+c.Members()[0].PeerURL)
	if r.code != 11 || r.stderr != "Error: etcdserver: Peer URLs already exists\n" {
		t.Errorf("add with a used peer URL: %v; want exit 11 and the one line", r)
	}
}
