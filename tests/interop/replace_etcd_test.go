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
	"sync"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

// TestClusterctlReplacesEtcdMember replaces an etcd 3.7.1 member that dies while member replace
// runs: the command adds the new member, prints its environment (-w env) and waits; the old
// member is killed; a new etcd starts from that environment plus where to listen; the command
// promotes it and removes the dead member. Run again with the same arguments it finds every step
// done: exit 0, nothing changed.
//
// The learner is added while the old member still runs: etcd's strict reconfiguration check
// refuses any member add, a learner's too, while the leader is not connected to every voter. A
// member already dead when the command starts is therefore removed first, which the end of the
// test pins.
func TestClusterctlReplacesEtcdMember(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	oldID := mustID(t, c, "infra1")
	var alive []*cluster.Member
	for _, m := range c.Members() {
		if m.Name != "infra1" {
			alive = append(alive, m)
		}
	}
	ep := "--endpoints=" + cluster.Endpoints(alive)
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{ep, "member", "replace", "infra1", "infra3", "--peer-urls=" + m3.PeerURL, "--wait-timeout=1m", "-w", "env"}
	run, block := startReplace(t, c, ctl, args)

	// The old machine dies while the command waits; etcd reads the ETCD_* variables clusterctl
	// printed; the command promotes the new member and removes the dead one.
	if err := c.Kill("infra1"); err != nil {
		t.Fatal(err)
	}
	startFromEnv(t, c, "infra3", block)
	r := run.wait(t)
	if r.code != 0 || r.stdout != block {
		t.Fatalf("member replace: %v", r)
	}
	newID := mustID(t, c, "infra3")
	for _, want := range []string{
		fmt.Sprintf("step 1 of 4: added infra3 (%016x) as learner\n", newID),
		fmt.Sprintf("step 2 of 4: promoted infra3 (%016x)\n", newID),
		fmt.Sprintf("step 4 of 4: removed infra1 (%016x)\n", oldID),
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("member replace's stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	all := "--endpoints=" + cluster.Endpoints(append(alive, m3))
	list := runCLI(t, ctl, all, "member", "list")
	if list.code != 0 || strings.Contains(list.stdout, "infra1") || strings.Count(list.stdout, ", started, ") != 3 ||
		!strings.Contains(list.stdout, fmt.Sprintf("%016x, started, infra3, %s, %s, false\n", newID, m3.PeerURL, m3.ClientURL())) {
		t.Fatalf("after the replacement: %v", list)
	}

	// Run again after completion: every step found done, exit 0, the membership unchanged. The
	// environment printed again lists the members of now.
	again := runCLI(t, ctl, append([]string{all}, args[1:]...)...)
	if again.code != 0 {
		t.Fatalf("member replace run again: %v", again)
	}
	if !strings.HasPrefix(again.stdout, "ETCD_NAME=\"infra3\"\n") || strings.Contains(again.stdout, "infra1=") {
		t.Errorf("member replace run again printed:\n%s", again.stdout)
	}
	for _, want := range []string{
		fmt.Sprintf("step 1 of 4: infra3 (%016x) is in the cluster already: add skipped\n", newID),
		fmt.Sprintf("step 2 of 4: infra3 (%016x) is a voter already: promotion skipped\n", newID),
		"step 3 of 4: infra1 is gone already: leadership not moved\n",
		"step 4 of 4: infra1 is gone already: removal skipped\n",
	} {
		if !strings.Contains(again.stderr, want) {
			t.Errorf("member replace run again: stderr lacks %q:\n%s", want, again.stderr)
		}
	}
	if after := runCLI(t, ctl, all, "member", "list"); after.stdout != list.stdout {
		t.Errorf("member replace run again changed the membership:\nbefore:\n%s\nafter:\n%s", list.stdout, after.stdout)
	}

	// A member dead before the command starts: removed first (etcd refuses even a learner while
	// a voter is down), then the new member added, started from the printed environment and
	// promoted. etcd's window after the kill may hold a step up: the command waits it out.
	if err := c.Kill("infra2"); err != nil {
		t.Fatal(err)
	}
	oldID2 := mustID(t, c, "infra2")
	m4, err := c.Alloc("infra4")
	if err != nil {
		t.Fatal(err)
	}
	var live []*cluster.Member
	for _, m := range c.Members() {
		if m.Running() {
			live = append(live, m)
		}
	}
	run4 := startCLI(t, ctl, "--endpoints="+cluster.Endpoints(live), "member", "replace", "infra2", "infra4", "--peer-urls="+m4.PeerURL, "--wait-timeout=1m", "-w", "env")
	block4 := run4.env(t)
	startFromEnv(t, c, "infra4", block4)
	dead := run4.wait(t)
	newID4 := mustID(t, c, "infra4")
	if dead.code != 0 || dead.stdout != block4 {
		t.Fatalf("member replace of a dead etcd member: %v", dead)
	}
	for _, want := range []string{
		// etcd's leader, by its etcd_network_active_peers, is one source
		fmt.Sprintf("infra2 (%016x) is dead (no answer on its client URLs, leader ", oldID2),
		" does not hear it): it is removed first, then infra4 is added and promoted\n",
		fmt.Sprintf("step 1 of 3: removed infra2 (%016x)\n", oldID2),
		fmt.Sprintf("step 2 of 3: added infra4 (%016x) as learner\n", newID4),
		fmt.Sprintf("step 3 of 3: promoted infra4 (%016x)\n", newID4),
	} {
		if !strings.Contains(dead.stderr, want) {
			t.Errorf("member replace of a dead member: stderr lacks %q:\n%s", want, dead.stderr)
		}
	}
	if after := runCLI(t, ctl, "--endpoints="+cluster.Endpoints(live), "member", "list"); strings.Contains(after.stdout, ", infra2, ") || strings.Count(after.stdout, ", started, ") != 3 {
		t.Errorf("after the replacement of the dead member:\n%s", after.stdout)
	}
}

// startReplace starts `clusterctl member replace` with args (-w env, the new member infra3) and
// returns it once it has printed the environment, with that environment. etcd refuses a change
// for a while after a member stopped or started (exit 12, unhealthy cluster, nothing done): the
// command is run again until it adds the learner.
func startReplace(t *testing.T, c *cluster.Cluster, ctl string, args []string) (*bgRun, string) {
	t.Helper()
	var run *bgRun
	err := proc.Poll(2*waitTimeout, "member replace adds the learner", func() (bool, error) {
		run = startCLI(t, ctl, args...)
		for {
			if out := run.stdout(); strings.Count(out, "\n") >= 4 {
				return true, nil
			}
			if r, done := run.result(); done {
				if r.code == 12 && r.stdout == "" {
					return false, fmt.Errorf("%v", r)
				}
				t.Fatalf("member replace before printing the environment: %v", r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	block := run.stdout()
	if !strings.HasPrefix(block, "ETCD_NAME=\"infra3\"\n") || strings.Count(block, "\n") != 4 || strings.Count(block, "ETCD_") != 4 {
		t.Fatalf("member replace -w env printed:\n%s", block)
	}
	for _, m := range c.Members() {
		if !strings.Contains(block, m.Name+"="+m.PeerURL) {
			t.Errorf("ETCD_INITIAL_CLUSTER lacks %s=%s:\n%s", m.Name, m.PeerURL, block)
		}
	}
	return run, block
}

// TestClusterctlReplacesEtcdLeader replaces etcd 3.7.1's leader: the new member, started from the
// printed environment, is promoted, leadership moves to it, and the old leader is removed.
func TestClusterctlReplacesEtcdLeader(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	old, oldID, err := c.WaitLeader(waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	ep := "--endpoints=" + cluster.Endpoints(c.Members())
	run, block := startReplace(t, c, ctl, []string{ep, "member", "replace", old.Name, "infra3", "--peer-urls=" + m3.PeerURL, "--wait-timeout=1m", "-w", "env"})
	startFromEnv(t, c, "infra3", block)
	r := run.wait(t)
	if r.code != 0 || r.stdout != block {
		t.Fatalf("member replace: %v", r)
	}
	for _, want := range []string{
		fmt.Sprintf("step 3 of 4: moved leadership from %s to infra3 (", old.Name),
		fmt.Sprintf("step 4 of 4: removed %s (%016x)\n", old.Name, oldID),
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("member replace's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// bgRun is a CLI run in the background, for a command that waits for something the test does
// while it runs.
type bgRun struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	out    bytes.Buffer
	errb   bytes.Buffer
	done   chan struct{}
	err    error
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startCLI starts a CLI as runCLI runs it, without waiting for it.
func startCLI(t *testing.T, bin string, args ...string) *bgRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*cmdTimeout)
	b := &bgRun{cancel: cancel, done: make(chan struct{})}
	b.cmd = exec.CommandContext(ctx, bin, args...)
	b.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	b.cmd.Stdout = lockedWriter{&b.mu, &b.out}
	b.cmd.Stderr = lockedWriter{&b.mu, &b.errb}
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-b.done })
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Logf("$ %s %s &", filepath.Base(bin), strings.Join(args, " "))
	return b
}

func (b *bgRun) stdout() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// result returns how the run ended, and false while it runs.
func (b *bgRun) result() (result, bool) {
	select {
	case <-b.done:
	default:
		return result{}, false
	}
	b.mu.Lock()
	r := result{stdout: b.out.String(), stderr: b.errb.String()}
	b.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case b.err == nil:
	case errors.As(b.err, &ee) && ee.ExitCode() >= 0:
		r.code = ee.ExitCode()
	default:
		r.code = -1
	}
	return r, true
}

// wait waits for the run to end, up to its own time limit.
func (b *bgRun) wait(t *testing.T) result {
	t.Helper()
	<-b.done
	r, _ := b.result()
	t.Logf("$ (background run ended)\n%v", r)
	if r.code == -1 {
		t.Fatalf("the background run did not exit by itself: %v\n%v", b.err, r)
	}
	return r
}

func (b *bgRun) stderr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errb.String()
}

// env waits for the run, a -w env command that goes on waiting, to print the four lines of an
// environment, and returns them; a run that ends first fails the test.
func (b *bgRun) env(t *testing.T) string {
	t.Helper()
	var block string
	if err := proc.Poll(waitTimeout, "the environment printed", func() (bool, error) {
		if r, done := b.result(); done {
			t.Fatalf("the run ended before printing the environment: %v", r)
		}
		block = b.stdout()
		return strings.Count(block, "\n") >= 4, nil
	}); err != nil {
		t.Fatal(err)
	}
	return block
}
