package chaos

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	harness "github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/pkg/crashpoint"
)

// member replace of a dead member, killed between the old member's removal and the new one's
// add (the crash point there): nothing in the membership remembers the old member, and the same
// command line run again goes on from clusterd's history, adds the new member, waits for it to
// start from the environment it prints, and promotes it. Replacing the same old member again
// under another name is then exit 10, nothing added. Real processes: three clusterd members,
// one killed with SIGKILL, clusterctl killed by its crash point.
func TestReplaceCrashPoint(t *testing.T) {
	bin := t.TempDir()
	if err := buildTagged(bin, false, "github.com/clusterctl/clusterctl/cmd/clusterd", "github.com/clusterctl/clusterctl/cmd/clusterctl"); err != nil {
		t.Fatal(err)
	}
	c := harness.New(harness.Config{Server: filepath.Join(bin, "clusterd"), Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}, Logf: t.Logf})
	t.Cleanup(c.Close)
	ms, err := c.Bootstrap(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(30*time.Second, "infra0", "infra1", "infra2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("infra2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(30*time.Second, "infra0", "infra1"); err != nil {
		t.Fatal(err)
	}
	r1, err := c.Alloc("r1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eps := "--endpoints=" + harness.Endpoints(ms[:2])
	replace := []string{eps, "member", "replace", "infra2", "r1", "--peer-urls=" + r1.PeerURL, "--wait-timeout=60s", "-w", "env"}
	ctl := func(env []string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "clusterctl"), args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		return cmd
	}

	// Killed after the removal, before the add.
	var stderr strings.Builder
	cmd := ctl([]string{crashpoint.EnvVar + "=" + crashpoint.ReplaceRemovedFirst}, replace...)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL ||
		!strings.Contains(stderr.String(), "\nstep 1 of 3: removed infra2 ") || !strings.Contains(stderr.String(), crashLine(crashpoint.ReplaceRemovedFirst)) {
		t.Fatalf("replace armed at %s: %v\n%s", crashpoint.ReplaceRemovedFirst, err, stderr.String())
	}
	list := func() string {
		t.Helper()
		out, err := ctl(nil, eps, "member", "list").Output()
		if err != nil {
			t.Fatalf("member list: %v", err)
		}
		return string(out)
	}
	if l := list(); strings.Count(l, "\n") != 2 || strings.Contains(l, "infra2") || strings.Contains(l, "r1") {
		t.Fatalf("after the kill, member list:\n%s", l)
	}

	// The same command line again: r1 added, started from the printed environment, promoted.
	stderr.Reset()
	cmd = ctl(nil, replace...)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for sc := bufio.NewScanner(out); sc.Scan(); {
		text.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "ETCD_INITIAL_CLUSTER_STATE=") {
			break
		}
	}
	env, err := harness.ParseEnv(text.String())
	if err == nil {
		err = c.Start("r1", r1.ListenArgs(), env)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("%v: printed %q\n%s", err, text.String(), stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("replace run again: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"infra2 (", ") was removed first by member replace at raft index ",
		"\nstep 1 of 3: infra2 is gone already: removal skipped\nstep 2 of 3: added r1 (",
		"\nstep 3 of 3: promoted r1 (",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("replace run again: no %q in\n%s", want, stderr.String())
		}
	}
	if l := list(); strings.Count(l, ", started, ") != 3 || !strings.Contains(l, ", started, r1, "+r1.PeerURL+", ") || strings.Contains(l, ", true\n") {
		t.Errorf("after the run again, member list:\n%s", l)
	}

	// Replaced: the same old member under another name is not found.
	stderr.Reset()
	cmd = ctl(nil, eps, "member", "replace", "infra2", "r2", "--peer-urls=http://127.0.0.1:1")
	cmd.Stderr = &stderr
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 10 || stderr.String() != "Error: member not found: no member with ID or name \"infra2\"\n" {
		t.Errorf("replace of infra2 by r2 after the replacement: %v\n%s", err, stderr.String())
	}
	if l := list(); strings.Count(l, "\n") != 3 {
		t.Errorf("after the replace by r2, member list:\n%s", l)
	}
}
