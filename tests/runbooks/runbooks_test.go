package runbooks

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

// The ports scripts/run-cluster.sh and the runbooks use before PORT_OFFSET moves them; all below
// the kernel's ephemeral range, so that no outgoing connection of another test can hold one.
var layoutPorts = []int{2379, 2380, 22379, 22380, 32379, 32380, 12379, 12380, 12479, 12480,
	13079, 13080, 13179, 13180, 13279, 13280, 13379, 13380, 14479, 14480,
	15579, 15580, 16579, 16580, 17579, 17580, 18579, 18580, 2479, 2480, 22479, 22480, 32479, 32480}

// runClusterPorts are the ports of run-cluster.sh's members and of the learner it suggests.
var runClusterPorts = []int{2379, 2380, 22379, 22380, 32379, 32380, 12379, 12380}

// ephemeralStart is where Linux's default range of ports for outgoing connections begins
// (net.ipv4.ip_local_port_range): a port at or above it can be held by any connection on the
// machine, a member's own among them, when a runbook comes to bind it.
const ephemeralStart = 32768

// portOffset chooses the PORT_OFFSET a test runs the script or the runbooks with: ports moved by
// it are free, stay from 1024 up and below the ephemeral range, and share none with another
// test's (freeport.Offset), so the tests run beside make run's cluster and beside other tests.
func portOffset(t *testing.T, ports []int) int {
	t.Helper()
	off, err := freeport.Offset(ports, 1024-slices.Min(ports), ephemeralStart-1-slices.Max(ports))
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// Every loopback port the runbooks and scripts/run-cluster.sh name, PORT_OFFSET at 0, is below
// the ephemeral range (a runbook's member once failed to start on 42480: "address already in
// use"), and is in layoutPorts, which the tests keep free.
func TestRunbookPortsBelowEphemeralRange(t *testing.T) {
	root, files := runbooks(t)
	files = append(files, filepath.Join(root, "scripts", "run-cluster.sh"))
	port := regexp.MustCompile(`127\.0\.0\.1:(?:\$\(\(PORT_OFFSET \+ )?([0-9]+)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range port.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[1])
			if n >= ephemeralStart {
				t.Errorf("%s: 127.0.0.1:%d is in the ephemeral range (%d and above)", filepath.Base(f), n, ephemeralStart)
			}
		}
	}
	for _, p := range layoutPorts {
		if p >= ephemeralStart {
			t.Errorf("layoutPorts: %d is in the ephemeral range", p)
		}
	}
}

// blocks returns the ```sh blocks of a markdown file, in order.
func blocks(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out, sc.Err()
}

// localEndpoints are the client URLs of the cluster scripts/run-cluster.sh starts with
// PORT_OFFSET=off.
func localEndpoints(off int) string {
	return fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", 2379+off, 22379+off, 32379+off)
}

var (
	binDir   string // clusterd and clusterctl, built once for every workspace
	buildErr error
)

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithOwn(m, func(dir string, err error) { binDir, buildErr = dir, err }))
}

// workspace lays out a directory like the repository after make build: bin/ with both binaries
// and etcd 3.7.1's etcd and etcdctl, scripts/run-cluster.sh.
func workspace(t *testing.T) string {
	t.Helper()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if buildErr != nil {
		t.Fatalf("building clusterd and clusterctl: %v", buildErr)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The discovery runbook runs a real etcd as the discovery service, from bin/etcd as its
	// Requires line says.
	etcd, err := cluster.BuildEtcd()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{"etcd": etcd.Etcd, "etcdctl": etcd.Etcdctl,
		"clusterd": filepath.Join(binDir, "clusterd"), "clusterctl": filepath.Join(binDir, "clusterctl")}
	for bin, path := range bins {
		if err := os.Symlink(path, filepath.Join(work, "bin", bin)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(work, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "run-cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "scripts", "run-cluster.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return work
}

// waitLocal waits until the local cluster, moved by off, lists its three members as started,
// and returns the list.
func waitLocal(t *testing.T, work string, off int) string {
	t.Helper()
	var list string
	err := proc.Poll(30*time.Second, "the local cluster answers", func() (bool, error) {
		cmd := exec.Command("bin/clusterctl", "--endpoints="+localEndpoints(off), "member", "list")
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err == nil && bytes.Count(out, []byte(", started, ")) == 3 {
			list = string(out)
			return true, nil
		}
		return false, fmt.Errorf("%v: %s", err, out)
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// runbooks returns the module's root and its runbooks, docs/runbooks/*.md.
func runbooks(t *testing.T) (root string, books []string) {
	t.Helper()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	books, err = filepath.Glob(filepath.Join(root, "docs", "runbooks", "*.md"))
	if err != nil || len(books) == 0 {
		t.Fatalf("no runbooks found: %v", err)
	}
	return root, books
}

// Each runbook runs in a workspace and at a PORT_OFFSET of its own, beside the others, but for
// those that find members by pgrep: they match every local cluster's members, so they run first,
// alone (the other tests of this package, which start members too, run after this one).
func TestRunbooks(t *testing.T) {
	_, books := runbooks(t)
	for _, book := range books {
		t.Run(strings.TrimSuffix(filepath.Base(book), ".md"), func(t *testing.T) {
			bs, err := blocks(book)
			if err != nil || len(bs) == 0 {
				t.Fatalf("no sh blocks: %v", err)
			}
			if !strings.Contains(strings.Join(bs, "\n"), "pgrep") {
				t.Parallel()
			} else {
				noLocalMembers(t)
			}
			work := workspace(t)
			off := portOffset(t, layoutPorts)
			groups := &processGroups{off: off}
			defer groups.kill()
			if _, err := groups.start(work, "scripts/run-cluster.sh"); err != nil {
				t.Fatal(err)
			}
			waitLocal(t, work, off)
			for i, b := range bs {
				out, err := groups.run(work, 3*time.Minute, b)
				if err != nil {
					t.Fatalf("block %d of %s failed: %v\n--- block ---\n%s--- output ---\n%s%s", i+1, filepath.Base(book), err, b, out, memberLogs(work))
				}
			}
		})
	}
}

// noLocalMembers waits until no process of a runbook's member (bin/clusterd, run from a
// workspace) is left from an earlier runbook: one killed a moment ago may take seconds to go on a
// loaded machine, and a runbook that finds its members with pgrep would find it too.
func noLocalMembers(t *testing.T) {
	t.Helper()
	err := proc.Poll(30*time.Second, "no member of an earlier runbook left", func() (bool, error) {
		out, err := exec.Command("pgrep", "-f", "^bin/clusterd ").Output()
		if err != nil {
			return true, nil // pgrep exits 1 when nothing matches
		}
		return false, fmt.Errorf("still running: %s", strings.Join(strings.Fields(string(out)), " "))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// make run's promise (README): Ctrl-C stops the members and keeps their data, and running it
// again restarts the same cluster.
func TestRunClusterCtrlCKeepsData(t *testing.T) {
	t.Parallel()
	work := workspace(t)
	off := portOffset(t, runClusterPorts)
	groups := &processGroups{off: off}
	defer groups.kill()
	run := func() (pgid int, exited chan error) { return groups.runCluster(t, work, nil) }

	pgid, exited := run()
	waitLocal(t, work, off)
	// Something only the data can remember: a new cluster from the same flags would have the
	// same member IDs, but not this learner.
	add := exec.Command("bin/clusterctl", "--endpoints="+localEndpoints(off), "member", "add", "infra3", fmt.Sprintf("--peer-urls=http://127.0.0.1:%d", 12380+off), "--learner")
	add.Dir = work
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("member add: %v\n%s", err, out)
	}
	before := waitLocal(t, work, off)
	if !strings.Contains(before, ", unstarted, ") {
		t.Fatalf("the learner is not listed:\n%s", before)
	}
	interruptRunCluster(t, pgid, exited, func() string { return memberLogs(work) })

	run()
	if after := waitLocal(t, work, off); after != before {
		t.Fatalf("the restarted cluster is not the same:\n--- before ---\n%s--- after ---\n%s", before, after)
	}
}

// memberLogs is the end of each member's log under data/, for a failure message.
func memberLogs(work string) string {
	logs, _ := filepath.Glob(filepath.Join(work, "data", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		fmt.Fprintf(&b, "--- end of %s ---\n%s\n", filepath.Base(l), proc.Tail(l, 8))
	}
	return b.String()
}

// withoutEtcdVars is this process's environment without ETCD_* variables: a runbook's members
// are started from its flags and files alone, and clusterd refuses the ETCD_* settings it does
// not implement, so a developer's stray one would fail every runbook.
func withoutEtcdVars() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}

// processGroups tracks every process group a runbook starts: a block's background members live
// on after its bash exits, and all of them must be gone before the next runbook. Every process
// gets PORT_OFFSET=off.
type processGroups struct {
	off int
	// extra are variables every process gets besides: those a runbook documents for a cluster
	// with TLS and auth.
	extra []string
	pgids []int
}

// env is the environment of every process: this one's without ETCD_* variables, with the
// offset and the extra variables.
func (g *processGroups) env() []string {
	return append(append(withoutEtcdVars(), "PORT_OFFSET="+strconv.Itoa(g.off)), g.extra...)
}

func (g *processGroups) start(dir string, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = g.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g.pgids = append(g.pgids, cmd.Process.Pid)
	// Reaped only: the whole group is killed at the end.
	go func() { _ = cmd.Wait() }()
	return cmd, nil
}

// runCluster starts scripts/run-cluster.sh with args in dir, in a process group of its own
// (killed at the end), its output to out (nil: discarded); it returns the group's ID and a
// channel that gets the script's exit.
func (g *processGroups) runCluster(t *testing.T, dir string, out io.Writer, args ...string) (pgid int, exited chan error) {
	t.Helper()
	cmd := exec.Command("scripts/run-cluster.sh", args...)
	cmd.Dir = dir
	cmd.Env = g.env()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.pgids = append(g.pgids, cmd.Process.Pid)
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd.Process.Pid, exited
}

// interruptRunCluster does what a terminal's Ctrl-C does to a run script started by runCluster:
// it signals the whole foreground process group, the script and its members. The script must
// exit 0 within 30 s and every member within 10 s more; logs says why not.
func interruptRunCluster(t *testing.T, pgid int, exited chan error, logs func() string) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run-cluster.sh after Ctrl-C: %v\n%s", err, logs())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run-cluster.sh did not stop within 30s of Ctrl-C\n%s", logs())
	}
	if err := proc.Poll(10*time.Second, "the members exit", func() (bool, error) {
		return syscall.Kill(-pgid, 0) != nil, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// run runs one block in bash and returns its combined output.
func (g *processGroups) run(dir string, timeout time.Duration, block string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	// The shell of a reader who exported what run-cluster.sh printed for its moved ports.
	cmd.Env = append(g.env(), "CLUSTERCTL_ENDPOINTS="+localEndpoints(g.off))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	g.pgids = append(g.pgids, cmd.Process.Pid)
	// Background members keep the output pipe open after bash exits; stop waiting for it then.
	cmd.WaitDelay = time.Second
	err := cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("did not finish within %v", timeout)
	}
	return out.String(), err
}

// kill ends every group, politely first so members close their data, then for good.
func (g *processGroups) kill() {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		alive := false
		for _, pg := range g.pgids {
			if syscall.Kill(-pg, sig) == nil {
				alive = true
			}
		}
		if !alive {
			return
		}
		_ = proc.Poll(5*time.Second, "process groups exit", func() (bool, error) {
			for _, pg := range g.pgids {
				if syscall.Kill(-pg, 0) == nil {
					return false, nil
				}
			}
			return true, nil
		})
	}
}
