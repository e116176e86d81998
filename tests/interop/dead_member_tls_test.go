package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestDeadMemberOnSecuredEtcd is the failure path on etcd 3.7.1 set up as kubeadm sets it up
// (TLS and client certificates on both ports) with auth on: a member killed with SIGKILL is
// replaced by its rebuilt machine, under its own name and peer URL, on an empty data directory
// (removed first, added, started from the printed environment, promoted); then another member
// is killed and member prune removes it.
func TestDeadMemberOnSecuredEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.RSA2048)
	if err != nil {
		t.Fatal(err)
	}
	c := startTLSCluster(t, etcd.Etcd, ca)
	pre := append(tlsFlags(t, c, ca), enableEtcdAuth(t, c, ca)...)
	ctl := cli{t: t, pre: pre}
	infra1, err := c.Member("infra1")
	if err != nil {
		t.Fatal(err)
	}
	oldID := mustID(t, c, "infra1")

	// endpoint status with a user: the statuses need no login and the password is checked after
	// them, so no member shows behind the leader by the command's own Authenticate entry (etcd
	// makes each a raft entry)
	if err := proc.Poll(waitTimeout, "every member level with the leader", func() (bool, error) {
		r := ctl.run("endpoint", "status", "--cluster", "-w", "json")
		var rows []struct {
			Endpoint     string  `json:"Endpoint"`
			BehindLeader *uint64 `json:"behindLeader"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rows); r.code != 0 || err != nil || len(rows) != 3 {
			return false, fmt.Errorf("endpoint status: %v (%v)", r, err)
		}
		for _, row := range rows {
			if row.BehindLeader == nil || *row.BehindLeader != 0 {
				return false, fmt.Errorf("%s behind the leader: %v", row.Endpoint, r)
			}
		}
		return true, nil
	}); err != nil {
		t.Error(err)
	}

	// the rebuilt machine: same name, same peer URL, empty data directory
	if err := c.Kill("infra1"); err != nil {
		t.Fatal(err)
	}
	run := startCLI(t, filepath.Join(binDir, "clusterctl"), append(pre, "member", "replace", "infra1", "infra1", "--peer-urls="+infra1.PeerURL, "--wait-timeout=1m", "-w", "env")...)
	block := run.env(t)
	if err := os.RemoveAll(infra1.DataDir); err != nil {
		t.Fatal(err)
	}
	startFromEnv(t, c, "infra1", block)
	r := run.wait(t)
	if r.code != 0 || r.stdout != block {
		t.Fatalf("member replace infra1 infra1: %v", r)
	}
	newID := mustID(t, c, "infra1")
	for _, want := range []string{
		fmt.Sprintf("step 1 of 3: removed infra1 (%016x)\n", oldID),
		fmt.Sprintf("step 2 of 3: added infra1 (%016x) as learner\n", newID),
		fmt.Sprintf("step 3 of 3: promoted infra1 (%016x)\n", newID),
		"infra1 serves: a started voter, a linearizable read through its own client URL answered\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("member replace: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// It returned once the new member serves: the cluster is whole at once, not seconds later.
	if st := ctl.run("cluster", "status"); st.code != 0 {
		t.Errorf("cluster status right after member replace: %v", st)
	}
	for _, bad := range []string{"not in sync yet", "no answer within", "Error"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("member replace said %q before it succeeded:\n%s", bad, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "unknown authority") || strings.Contains(r.stderr, "user name is empty") {
		t.Errorf("a call without the command's TLS settings or credentials:\n%s", r.stderr)
	}
	list := ctl.run("member", "list")
	if list.code != 0 || strings.Count(list.stdout, ", started, ") != 3 || !strings.Contains(list.stdout, fmt.Sprintf("%016x, started, infra1, %s, ", newID, infra1.PeerURL)) {
		t.Fatalf("after the rebuild: %v", list)
	}

	// another member dies: prune removes it
	id2 := mustID(t, c, "infra2")
	if err := c.Kill("infra2"); err != nil {
		t.Fatal(err)
	}
	dry := ctl.run("member", "prune", "--unreachable-for=2s", "--dry-run")
	// the two live members kept, each with its evidence, after the verdict
	if dry.code != 0 || !strings.HasPrefix(dry.stdout, fmt.Sprintf("would prune infra2 (%016x): voter, no answer for ", id2)) || strings.Count(dry.stdout, "\nwould keep ") != 2 {
		t.Errorf("member prune --dry-run: %v", dry)
	}
	p := ctl.run("member", "prune", "--unreachable-for=2s")
	if p.code != 0 || !strings.HasPrefix(p.stdout, fmt.Sprintf("pruned infra2 (%016x): voter, no answer for ", id2)) || strings.Count(p.stdout, "\n") != 1 {
		t.Errorf("member prune: %v", p)
	}
	if l := ctl.run("member", "list"); strings.Contains(l.stdout, "infra2") || strings.Count(l.stdout, ", started, ") != 2 {
		t.Errorf("after member prune: %v", l)
	}
}
