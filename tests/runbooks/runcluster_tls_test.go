package runbooks

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

// make run TLS=1's promise (docs/security.md, docs/clusterd.md), on ports moved by PORT_OFFSET:
// three members with TLS and client certificates on both ports, the member table printed as the
// plain run prints it, and export lines that reach the cluster as they are, the offset among
// them; without the client certificate clusterctl is refused at the handshake (exit 20). Ctrl-C
// keeps the data, and a second run reuses the certificates and restarts the same cluster.
func TestRunClusterTLS(t *testing.T) {
	t.Parallel()
	work := workspace(t)
	off := portOffset(t, runClusterPorts)
	groups := &processGroups{off: off}
	defer groups.kill()
	out := filepath.Join(work, "run-tls.out")
	run := func() (pgid int, exited chan error) {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return groups.runCluster(t, work, f, "--tls")
	}

	pgid, exited := run()
	env, table := waitExports(t, work, out)
	for _, name := range []string{"infra0", "infra1", "infra2"} {
		if !strings.Contains(table, "| "+name+" ") || !strings.Contains(table, fmt.Sprintf("https://127.0.0.1:%d", 22379+off)) {
			t.Fatalf("the printed table lacks %s or https URLs:\n%s", name, table)
		}
	}
	ctl := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("bin/clusterctl", args...)
		cmd.Dir = work
		cmd.Env = append(withoutEtcdVars(), env...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// The offset is printed for the runbooks, and the endpoints are moved by it.
	if !slices.Contains(env, fmt.Sprintf("PORT_OFFSET=%d", off)) {
		t.Fatalf("the printed variables lack PORT_OFFSET=%d: %s", off, env)
	}
	before, err := ctl(env, "member", "list")
	if err != nil || strings.Count(before, ", started, ") != 3 {
		t.Fatalf("member list with the printed variables: %v\n%s", err, before)
	}
	// The CA alone is not enough: the members ask for a client certificate.
	var caOnly []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CLUSTERCTL_CERT=") && !strings.HasPrefix(kv, "CLUSTERCTL_KEY=") {
			caOnly = append(caOnly, kv)
		}
	}
	o, err := ctl(caOnly, "member", "list")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 20 {
		t.Fatalf("member list without a client certificate: %v, want exit 20\n%s", err, o)
	}

	interruptRunCluster(t, pgid, exited, func() string { return tlsLogs(work) })
	ca, err := os.ReadFile(filepath.Join(work, "data-tls", "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}

	run()
	env2, _ := waitExports(t, work, out)
	if strings.Join(env2, " ") != strings.Join(env, " ") {
		t.Fatalf("the second run prints other variables:\n%s\n%s", env, env2)
	}
	if again, _ := os.ReadFile(filepath.Join(work, "data-tls", "pki", "ca.pem")); !bytes.Equal(again, ca) {
		t.Fatal("the second run made a new CA")
	}
	after, err := ctl(env, "member", "list")
	if err != nil || after != before {
		t.Fatalf("the restarted cluster is not the same (%v):\n--- before ---\n%s--- after ---\n%s", err, before, after)
	}
}

// waitExports waits until run-cluster.sh --tls has printed its export lines into out and
// returns them as variables, with the member table printed before them.
func waitExports(t *testing.T, work, out string) (env []string, table string) {
	t.Helper()
	err := proc.Poll(60*time.Second, "run-cluster.sh --tls prints its export lines", func() (bool, error) {
		b, err := os.ReadFile(out)
		if err != nil {
			return false, err
		}
		text := string(b)
		table, _, _ = strings.Cut(text, "\nA 3-member cluster")
		env = nil
		for _, line := range strings.Split(text, "\n") {
			if kv, ok := strings.CutPrefix(line, "export "); ok {
				env = append(env, kv)
			}
		}
		if len(env) < 4 {
			return false, fmt.Errorf("output so far:\n%s", text)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, tlsLogs(work))
	}
	return env, table
}

// tlsLogs is the end of each member's log under data-tls/, for a failure message.
func tlsLogs(work string) string {
	logs, _ := filepath.Glob(filepath.Join(work, "data-tls", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		fmt.Fprintf(&b, "--- end of %s ---\n%s\n", filepath.Base(l), proc.Tail(l, 8))
	}
	return b.String()
}
