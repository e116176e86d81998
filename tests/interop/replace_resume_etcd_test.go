package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// A member replace of a dead etcd 3.7.1 member stopped between the removal and the add (here the
// removal made by hand, as the stopped run made it): etcd keeps no membership history, so the
// same command line finds neither member and exits 10 with the not-found line, nothing changed.
// The documented next step then finishes it: member add of the new member as a learner, started
// from the environment printed, and the command run again, which finds it added and promotes it.
func TestReplaceStoppedAfterRemovalOnEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	if err := c.Kill("infra2"); err != nil {
		t.Fatal(err)
	}
	var live []*cluster.Member
	for _, m := range c.Members() {
		if m.Running() {
			live = append(live, m)
		}
	}
	ep := "--endpoints=" + cluster.Endpoints(live)
	// etcd's window after the kill may refuse the removal (12) for a while.
	if r := runUntil(t, codeIs(12), ctl, ep, "member", "remove", "infra2"); r.code != 0 {
		t.Fatalf("member remove of the dead member: %v", r)
	}
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	replace := []string{ep, "member", "replace", "infra2", "infra3", "--peer-urls=" + m3.PeerURL, "--wait-timeout=1m", "-w", "env"}
	before := runCLI(t, ctl, ep, "member", "list")
	r := runCLI(t, ctl, replace...)
	step := "clusterctl " + ep + " member add infra3 --learner --peer-urls=" + m3.PeerURL
	want := "Error: member not found: no member with ID or name \"infra2\", nor \"infra3\": if member replace removed infra2 first and stopped before the add, " +
		"run " + step + ", then this command again\n"
	if r.code != 10 || r.stdout != "" || r.stderr != want {
		t.Fatalf("member replace after the removal, on etcd: %v", r)
	}
	if after := runCLI(t, ctl, ep, "member", "list"); after.stdout != before.stdout {
		t.Fatalf("the refused replace changed the membership:\n%s\n%s", before.stdout, after.stdout)
	}

	// The next step, exactly as the error prints it (its environment asked for), then the new
	// member started from it and the command run again.
	add := runUntil(t, codeIs(12), ctl, append(strings.Fields(step)[1:], "-w", "env")...)
	if add.code != 0 {
		t.Fatalf("member add: %v", add)
	}
	startFromEnv(t, c, "infra3", add.stdout)
	newID := mustID(t, c, "infra3")
	again := runUntil(t, codeIs(12), ctl, replace...)
	if again.code != 0 || again.stdout != add.stdout {
		t.Fatalf("member replace run again: %v\nmember add printed:\n%s", again, add.stdout)
	}
	for _, want := range []string{
		fmt.Sprintf("step 1 of 4: infra3 (%016x) is in the cluster already: add skipped\n", newID),
		fmt.Sprintf("step 2 of 4: promoted infra3 (%016x)\n", newID),
		"step 4 of 4: infra2 is gone already: removal skipped\n",
	} {
		if !strings.Contains(again.stderr, want) {
			t.Errorf("member replace run again: stderr lacks %q:\n%s", want, again.stderr)
		}
	}
	all := "--endpoints=" + cluster.Endpoints(append(live, m3))
	if list := runCLI(t, ctl, all, "member", "list"); strings.Count(list.stdout, ", started, ") != 3 || strings.Contains(list.stdout, "true\n") {
		t.Errorf("after the replacement: %v", list)
	}
}
