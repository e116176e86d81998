package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// etcd's TestRejectUnhealthyAdd and TestRejectUnhealthyRemove on real processes, etcd 3.7.1 and
// clusterd side by side, with etcdctl and clusterctl: a member stops (SIGTERM, SIGKILL) and at
// once, through the leader and through a follower, a voter add and the removal of a live member
// are refused with "unhealthy cluster" (etcdctl exit 1, clusterctl exit 12), the membership
// unchanged; the stopped member's removal is accepted.
func TestRejectUnhealthyRightAfterAStop(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	for _, server := range []struct{ name, bin string }{{"etcd", etcd.Etcd}, {"clusterd", filepath.Join(binDir, "clusterd")}} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(server.name+"/"+sig.String(), func(t *testing.T) { rejectUnhealthy(t, server.bin, sig) })
		}
	}
}

func rejectUnhealthy(t *testing.T, server string, sig syscall.Signal) {
	c := startCluster(t, server)
	ctl := filepath.Join(binDir, "clusterctl")
	all := "--endpoints=" + cluster.Endpoints(c.Members())
	healthy(t, c, ctl, all)
	leader, _, err := c.WaitLeader(waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var stopped, follower string
	for _, name := range cluster.BootstrapNames(3) {
		switch {
		case name == leader.Name:
		case stopped == "":
			stopped = name
		default:
			follower = name
		}
	}
	stoppedID := fmt.Sprintf("%016x", mustID(t, c, stopped))
	followerID := fmt.Sprintf("%016x", mustID(t, c, follower))
	before := runCLI(t, ctl, all, "member", "list")
	if sig == syscall.SIGKILL {
		err = c.Kill(stopped)
	} else {
		err = c.Stop(stopped, waitTimeout)
	}
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.Alloc("x")
	if err != nil {
		t.Fatal(err)
	}
	for _, through := range []string{leader.Name, follower} {
		m, err := c.Member(through)
		if err != nil {
			t.Fatal(err)
		}
		ep := "--endpoints=" + m.ClientURL()
		for _, args := range [][]string{
			{"member", "add", "x", "--peer-urls=" + x.PeerURL},
			{"member", "remove", followerID},
		} {
			if r := runCLI(t, ctl, append([]string{ep}, args...)...); r.code != 12 || r.stderr != "Error: etcdserver: unhealthy cluster\n" || r.stdout != "" {
				t.Errorf("clusterctl %s through %s right after a member stopped: %v\nwant exit 12, etcdserver: unhealthy cluster", strings.Join(args, " "), through, r)
			}
			if r := runCLI(t, etcd.Etcdctl, append([]string{ep}, args...)...); r.code != 1 || !strings.Contains(r.stderr, "Error: etcdserver: unhealthy cluster\n") {
				t.Errorf("etcdctl %s through %s right after a member stopped: %v\nwant exit 1, etcdserver: unhealthy cluster", strings.Join(args, " "), through, r)
			}
		}
	}
	if after := runCLI(t, ctl, "--endpoints="+leader.ClientURL(), "member", "list"); after.stdout != before.stdout {
		t.Errorf("the membership changed although every change was refused:\nbefore:\n%s\nafter:\n%s", before.stdout, after.stdout)
	}
	// The rest keep their quorum without the stopped member: its removal goes through.
	if r := runCLI(t, ctl, "--endpoints="+leader.ClientURL(), "member", "remove", stoppedID); r.code != 0 {
		t.Errorf("removing the stopped member: %v", r)
	}
}

// healthy waits until the cluster accepts a change, past etcd's 5 s window after a start, by
// adding a learner and removing it again.
func healthy(t *testing.T, c *cluster.Cluster, ctl, ep string) {
	t.Helper()
	probe, err := c.Alloc("probe")
	if err != nil {
		t.Fatal(err)
	}
	r := runUntil(t, codeIs(12), ctl, ep, "member", "add", "probe", "--learner", "--peer-urls="+probe.PeerURL)
	if r.code != 0 {
		t.Fatalf("adding a learner to a healthy cluster: %v", r)
	}
	id := fmt.Sprintf("%016x", mustID(t, c, "probe"))
	if r := runCLI(t, ctl, ep, "member", "remove", id); r.code != 0 {
		t.Fatalf("removing the learner: %v", r)
	}
}
