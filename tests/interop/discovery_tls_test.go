package interop

// Discovery through an etcd 3.7.1 discovery service that serves TLS with client-certificate
// authentication, then with etcd's auth enabled on it as well.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testpki"
	"github.com/clusterctl/clusterctl/tests/internal/cluster"
	"github.com/clusterctl/clusterctl/tests/internal/proc"
)

// tlsDiscovery is a one-member etcd discovery service over TLS and the client certificate that
// clusterctl and the members present to it.
type tlsDiscovery struct {
	ca       *testpki.CA
	client   *testpki.Pair
	endpoint string // https://127.0.0.1:PORT
}

func startTLSDiscoveryService(t *testing.T) tlsDiscovery {
	t.Helper()
	needBinaries(t)
	ca, err := testpki.NewCA(t.TempDir(), "discovery-ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("discovery-client")
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.New(cluster.Config{
		Server: etcd.Etcd,
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Token:  "discovery-service",
		Logf:   t.Logf,
		TLS:    ca,
	})
	t.Cleanup(c.Close)
	ms, err := c.Bootstrap(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	return tlsDiscovery{ca: ca, client: client, endpoint: ms[0].ClientURL()}
}

// ctl is clusterctl with the discovery service's endpoint and TLS flags.
func (d tlsDiscovery) ctl(t *testing.T) cli {
	return cli{t: t, pre: []string{"--endpoints=" + d.endpoint, "--cacert=" + d.ca.CertFile,
		"--cert=" + d.client.CertFile, "--key=" + d.client.KeyFile}}
}

// memberFlags are a member's --discovery-* TLS flags.
func (d tlsDiscovery) memberFlags() []string {
	return []string{"--discovery-cacert=" + d.ca.CertFile, "--discovery-cert=" + d.client.CertFile,
		"--discovery-key=" + d.client.KeyFile}
}

// TestDiscoveryOverTLS: clusterctl creates a token over TLS and prints the members' TLS lines;
// three clusterd members started at once, two with the --discovery-* TLS flags and one from the
// printed lines alone, form one cluster; discovery status shows them. A token reused exits 11, an
// unknown one 10, and a clusterctl without --cacert exits 20.
func TestDiscoveryOverTLS(t *testing.T) {
	d := startTLSDiscoveryService(t)
	ctl := d.ctl(t)
	r := ctl.run("discovery", "new", "--size=3", "-w", "env")
	if r.code != 0 {
		t.Fatalf("discovery new: %v", r)
	}
	for _, want := range []string{`ETCD_DISCOVERY_CACERT="` + d.ca.CertFile + `"`, `ETCD_DISCOVERY_CERT="` + d.client.CertFile + `"`,
		`ETCD_DISCOVERY_KEY="` + d.client.KeyFile + `"`, `ETCD_DISCOVERY_INSECURE_TRANSPORT="false"`} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("discovery new -w env does not print %s:\n%s", want, r.stdout)
		}
	}
	env, err := cluster.ParseEnv(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	var token, endpoints string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ETCD_DISCOVERY_TOKEN":
			token = v
		case "ETCD_DISCOVERY_ENDPOINTS":
			endpoints = v
		}
	}

	c := clusterdCluster(t)
	names := cluster.BootstrapNames(3)
	for _, name := range names[:2] {
		startWithToken(t, c, name, endpoints, token, d.memberFlags()...)
	}
	m, err := c.Alloc(names[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(names[2], append(m.BaseArgs(), "--initial-cluster-state=new"), env); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(2*waitTimeout, names...); err != nil {
		t.Fatal(err)
	}
	sameMembers(t, c)

	st := ctl.run("discovery", "status", token)
	if st.code != 0 || !strings.Contains(st.stdout, "size: 3\nregistered: 3\n") {
		t.Fatalf("status: %v", st)
	}
	for _, m := range c.Members() {
		if !strings.Contains(st.stdout, ", "+m.Name+", "+m.PeerURL+", member\n") {
			t.Errorf("status does not show %s at %s", m.Name, m.PeerURL)
		}
	}

	for _, tc := range []struct {
		name string
		ctl  cli
		args []string
		code int
		line string
	}{
		{"reused token", ctl, []string{"discovery", "new", "--token=" + token}, 11, "is already in use on this discovery service"},
		{"unknown token", ctl, []string{"discovery", "status", "nosuchtoken"}, 10, "discovery: size key not found"},
		{"no --cacert", cli{t: t, pre: []string{"--endpoints=" + d.endpoint, "--cert=" + d.client.CertFile, "--key=" + d.client.KeyFile}},
			[]string{"discovery", "status", token}, 20, "signed by an unknown authority"},
		{"no client certificate", cli{t: t, pre: []string{"--endpoints=" + d.endpoint, "--cacert=" + d.ca.CertFile}},
			[]string{"discovery", "new"}, 20, "client certificate"},
	} {
		r := tc.ctl.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.line) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: %v; want exit %d and one line with %q", tc.name, r, tc.code, tc.line)
		}
	}
}

// sameMembers fails unless every member of c lists the same members.
func sameMembers(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctl := filepath.Join(binDir, "clusterctl")
	var lists []string
	for _, m := range c.Members() {
		r := runCLI(t, ctl, "--endpoints="+m.ClientAddr, "member", "list", "--consistency=s", "-w", "json")
		if r.code != 0 {
			t.Fatal(r)
		}
		lists = append(lists, r.stdout[strings.Index(r.stdout, `"members"`):])
	}
	for _, l := range lists[1:] {
		if l != lists[0] {
			t.Fatalf("the members disagree:\n%s", strings.Join(lists, "\n"))
		}
	}
	if n := strings.Count(lists[0], `"name"`); n != len(lists) {
		t.Fatalf("%d members listed, want %d:\n%s", n, len(lists), lists[0])
	}
}

// TestDiscoveryOverTLSWithAuth: with etcd's auth on the TLS discovery service, root creates a
// token and a clusterd member registers with --discovery-user and --discovery-password; a wrong
// password is refused in one line by both, the password printed by neither.
func TestDiscoveryOverTLSWithAuth(t *testing.T) {
	d := startTLSDiscoveryService(t)
	etcdctl := func(args ...string) {
		t.Helper()
		r := runCLI(t, etcd.Etcdctl, append([]string{"--endpoints=" + d.endpoint, "--cacert=" + d.ca.CertFile,
			"--cert=" + d.client.CertFile, "--key=" + d.client.KeyFile}, args...)...)
		if r.code != 0 {
			t.Fatalf("etcdctl %s: %v", strings.Join(args, " "), r)
		}
	}
	etcdctl("role", "add", "root")
	etcdctl("user", "add", "root:rootpw")
	etcdctl("user", "grant-role", "root", "root")
	etcdctl("auth", "enable")

	ctl := d.ctl(t)
	wrong := ctl.run("--user=root", "--password=nope", "discovery", "new", "--size=1")
	if wrong.code != 22 || wrong.stderr != "Error: etcdserver: authentication failed, invalid user ID or password\n" || wrong.stdout != "" {
		t.Errorf("wrong password: %v", wrong)
	}
	r := ctl.run("--user=root", "--password=rootpw", "discovery", "new", "--size=1")
	if r.code != 0 {
		t.Fatalf("root discovery new: %v", r)
	}
	token := strings.TrimSpace(r.stdout)
	ep := strings.TrimPrefix(d.endpoint, "https://")

	c := clusterdCluster(t)
	startWithToken(t, c, "bad", ep, token, append(d.memberFlags(), "--discovery-user=root", "--discovery-password=nope")...)
	exit, err := c.WaitExit("bad", waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := c.Member("bad")
	stderr, _ := os.ReadFile(bad.Stderr)
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	last := lines[len(lines)-1]
	if exit.Code != 1 || !strings.HasPrefix(last, "clusterd: discovery: the discovery service at "+ep+" refused the credentials (etcdserver: authentication failed, invalid user ID or password)") ||
		!strings.Contains(last, "check --discovery-user and --discovery-password") {
		t.Errorf("wrong password: %v\n%s", exit, stderr)
	}
	t.Logf("clusterd with a wrong password: %s", last)
	if strings.Contains(string(stderr), "nope") {
		t.Errorf("the password was printed:\n%s", stderr)
	}
	if _, err := os.Stat(bad.DataDir + "/member.db"); err == nil {
		t.Errorf("the refused member wrote %s", bad.DataDir)
	}

	startWithToken(t, c, "infra0", ep, token, append(d.memberFlags(), "--discovery-user=root", "--discovery-password=rootpw")...)
	if err := c.WaitStarted(2*waitTimeout, "infra0"); err != nil {
		t.Fatal(err)
	}
	if err := proc.Poll(waitTimeout, "infra0 registered", func() (bool, error) {
		st := ctl.run("--user=root", "--password=rootpw", "discovery", "status", token)
		return strings.Contains(st.stdout, "registered: 1\n") && strings.Contains(st.stdout, ", infra0, "), nil
	}); err != nil {
		t.Fatal(err)
	}
}
