package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testpki"
)

// TestReadsWithLoginAfterMajorityLoss: on TLS etcd 3.7.1 with auth on and on TLS clusterd, two
// of three members are killed with SIGKILL; with a password login (by flags, and by a context
// holding user and password-file), cluster status, endpoint status and endpoint health answer
// within a second with the survivor's row: a status needs no token, and a login, which needs a
// leader, is never waited for.
func TestReadsWithLoginAfterMajorityLoss(t *testing.T) {
	needBinaries(t)
	for _, server := range []string{etcd.Etcd, filepath.Join(binDir, "clusterd")} {
		t.Run(filepath.Base(server), func(t *testing.T) { readsWithLoginAfterMajorityLoss(t, server) })
	}
}

func readsWithLoginAfterMajorityLoss(t *testing.T, server string) {
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.RSA2048)
	if err != nil {
		t.Fatal(err)
	}
	c := startTLSCluster(t, server, ca)
	flags := tlsFlags(t, c, ca)
	if server == etcd.Etcd {
		enableEtcdAuth(t, c, ca)
	}
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("rootpw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ctxFile strings.Builder
	ctxFile.WriteString("contexts:\n  - name: prod\n")
	for _, f := range flags {
		k, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		fmt.Fprintf(&ctxFile, "    %s: %q\n", k, v)
	}
	fmt.Fprintf(&ctxFile, "    user: root\n    password-file: %q\n", pwFile)
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(ctxFile.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	logins := map[string]cli{
		"flags":   {t: t, pre: append(flags, "--user=root:rootpw")},
		"context": {t: t, pre: []string{"--context=prod"}, env: []string{"CLUSTERCTL_CONFIG=" + config}},
	}
	// Both logins work while the cluster has its leader.
	for how, ctl := range logins {
		if r := ctl.run("cluster", "status"); r.code != 0 {
			t.Fatalf("cluster status (login by %s) before the loss: %v", how, r)
		}
	}

	for _, name := range []string{"infra1", "infra2"} {
		if err := c.Kill(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitNoLeader(waitTimeout, "infra0"); err != nil {
		t.Fatal(err)
	}
	survivor, err := c.Member("infra0")
	if err != nil {
		t.Fatal(err)
	}
	for how, ctl := range logins {
		for _, tc := range []struct {
			args []string
			code int
			row  string // the survivor's line in stdout
		}{
			{[]string{"cluster", "status"}, 33, "infra0"},
			{[]string{"endpoint", "status"}, 29, survivor.ClientURL()},
			{[]string{"endpoint", "health"}, 26, survivor.ClientURL() + " is unhealthy: etcdserver: no leader"},
		} {
			start := time.Now()
			r := ctl.run(tc.args...)
			took := time.Since(start)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.row) || strings.Contains(r.stderr, "timed out") {
				t.Errorf("%s (login by %s): exit %d, want %d with %q:\n%v", strings.Join(tc.args, " "), how, r.code, tc.code, tc.row, r)
			}
			if took > 2*time.Second {
				t.Errorf("%s (login by %s) took %s: it waited for a login", strings.Join(tc.args, " "), how, took)
			}
		}
	}
}
