package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestReadsWithLoginAfterMajorityLoss: on TLS etcd 3.7.1 with auth on and on TLS clusterd, two
// of three members are killed with SIGKILL; with a password login (by flags, and by a context
// holding user and password-file), cluster status and endpoint status answer at once and
// endpoint health after an election's length (1 s), well within their 5 s, with the survivor's
// row: a status needs no token, and a login, which needs a leader, is never waited for. Every
// membership change ends with exit 15, no leader, within about a second (changesWithoutLeader).
func TestReadsWithLoginAfterMajorityLoss(t *testing.T) {
	t.Parallel()
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
	// prod logs in with its password file; bad names one that is not there.
	var ctxFile strings.Builder
	ctxFile.WriteString("contexts:\n")
	for name, pw := range map[string]string{"prod": pwFile, "bad": filepath.Join(dir, "missing")} {
		fmt.Fprintf(&ctxFile, "  - name: %s\n", name)
		for _, f := range flags {
			k, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			fmt.Fprintf(&ctxFile, "    %s: %q\n", k, v)
		}
		fmt.Fprintf(&ctxFile, "    user: root\n    password-file: %q\n", pw)
	}
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
	if server == etcd.Etcd {
		loginRows(t, config, filepath.Join(dir, "missing"))
		// A wrong password is reported by the reads that need no token while a leader can
		// answer the login; after the loss it is skipped, as every login is.
		wrong := cli{t: t, pre: append(flags, "--user=root:wrong")}
		if r := wrong.run("cluster", "status"); r.code != 22 || r.stderr != "Error: etcdserver: authentication failed, invalid user ID or password\n" || r.stdout != "" {
			t.Errorf("cluster status with a wrong password: %v; want exit 22 and etcd's line alone", r)
		}
		logins["a wrong password"] = wrong
	}

	// A learner never started, for the promotion after the loss; etcd refuses a change in its
	// first seconds (exit 12).
	if r := logins["flags"].until(func(r result) bool { return r.code == 12 }, "member", "add", "learner1", "--learner", "--peer-urls=https://127.0.0.1:9"); r.code != 0 {
		t.Fatalf("member add learner1: %v", r)
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
			t.Logf("%s (login by %s): exit %d in %s", strings.Join(tc.args, " "), how, r.code, took.Round(time.Millisecond))
			if r.code != tc.code || !strings.Contains(r.stdout, tc.row) || strings.Contains(r.stderr, "timed out") {
				t.Errorf("%s (login by %s): exit %d, want %d with %q:\n%v", strings.Join(tc.args, " "), how, r.code, tc.code, tc.row, r)
			}
			if took > 2*time.Second {
				t.Errorf("%s (login by %s) took %s: it waited for a login", strings.Join(tc.args, " "), how, took)
			}
		}
		changesWithoutLeader(t, how, ctl)
	}
}

// changesWithoutLeader: every membership change with ctl's login, on a cluster that lost its
// majority, ends as a read does, exit 15 "no leader", well within the command's 5 s: the login
// a change needs is given up once the member's status names no leader for an election's length.
func changesWithoutLeader(t *testing.T, how string, ctl cli) {
	t.Helper()
	for _, args := range [][]string{
		{"member", "add", "infra3", "--peer-urls=https://127.0.0.1:8"},
		{"member", "remove", "infra2"},
		{"member", "update", "infra2", "--peer-urls=https://127.0.0.1:7"},
		{"member", "promote", "learner1"},
	} {
		start := time.Now()
		r := ctl.run(args...)
		took := time.Since(start)
		t.Logf("%s (login by %s): exit %d in %s", strings.Join(args, " "), how, r.code, took.Round(time.Millisecond))
		if r.code != 15 || r.stderr != "Error: etcdserver: no leader\n" {
			t.Errorf("%s (login by %s): %v; want exit 15, no leader", strings.Join(args, " "), how, r)
		}
		if took > 3*time.Second {
			t.Errorf("%s (login by %s) took %s: it waited for a login", strings.Join(args, " "), how, took)
		}
	}
}

// loginRows are rows of the login table (docs/commands/clusterctl.md#login) run on etcd with
// auth: a login from the command line or the environment replaces the context bad's, whose
// password file is missing, whole; --user= drops it (the client certificate's CN, root, is the
// user then); a password alone from the environment is refused, naming its variable. endpoint
// health needs the login: its read is a KV Range.
func loginRows(t *testing.T, config, missing string) {
	env := []string{"CLUSTERCTL_CONFIG=" + config}
	for _, row := range []struct {
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{nil, nil, 128, "Error: password-file in context bad: open " + missing + ": no such file or directory\n"},
		{nil, []string{"--user=root:rootpw"}, 0, ""},
		{nil, []string{"--user=root", "--password=rootpw"}, 0, ""},
		// each row says why: etcdserver: authentication failed, invalid user ID or password
		{nil, []string{"--user=root", "--password=wrong"}, 26, "Error: 3 of 3 endpoints unhealthy\n"},
		{[]string{"ETCDCTL_USER=root:rootpw"}, nil, 0, ""},
		{[]string{"ETCDCTL_USER=root", "ETCDCTL_PASSWORD=rootpw"}, nil, 0, ""},
		{[]string{"ETCDCTL_PASSWORD=rootpw"}, nil, 128, "Error: ETCDCTL_PASSWORD needs CLUSTERCTL_USER or ETCDCTL_USER\n"},
		{nil, []string{"--user="}, 0, ""},
	} {
		ctl := cli{t: t, env: append(append([]string{}, env...), row.env...), pre: append([]string{"--context=bad"}, row.args...)}
		r := ctl.run("endpoint", "health")
		if r.code != row.code || r.stderr != row.stderr {
			t.Errorf("%v %v endpoint health: exit %d, %q; want %d, %q", row.env, row.args, r.code, r.stderr, row.code, row.stderr)
		}
	}
}
