package interop

// Discovery through an etcd 3.7.1 discovery service that serves TLS with client-certificate
// authentication, then with etcd's auth enabled on it as well; and users without the root role
// on a service with etcd's auth, over plain http and TLS.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

// TestDiscoveryOverTLS: clusterctl creates a token over TLS and prints the members' TLS lines;
// three clusterd members started at once, two with the --discovery-* TLS flags and one from the
// printed lines alone, form one cluster; discovery status shows them. A token reused exits 11, an
// unknown one 10, and a clusterctl without --cacert exits 20.
func TestDiscoveryOverTLS(t *testing.T) {
	t.Parallel()
	d := startDiscoveryService(t, "https")
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
	t.Parallel()
	d := startDiscoveryService(t, "https")
	d.enableAuth(t)

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
	ep := d.addr

	c := clusterdCluster(t)
	startWithToken(t, c, "bad", ep, token, append(d.memberFlags(), "--discovery-user=root", "--discovery-password=nope")...)
	exit, last, stderr := refusal(t, c, "bad")
	if exit.Code != 1 || !strings.HasPrefix(last, "clusterd: discovery: the discovery service at "+ep+" refused the credentials (etcdserver: authentication failed, invalid user ID or password)") ||
		!strings.Contains(last, "check --discovery-user and --discovery-password") {
		t.Errorf("wrong password: %v: %s", exit, last)
	}
	if strings.Contains(stderr, "nope") {
		t.Errorf("the password was printed:\n%s", stderr)
	}
	nothingWritten(t, c, "bad")

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

// TestDiscoveryRefusesANonRootUser, over a plain and a TLS discovery service with etcd's auth on:
// a user without the root role is refused by clusterctl (exit 21, one Error: line) and by clusterd
// (one line that says permission denied and what to grant), and writes nothing. A user without
// any role is refused the reads; one whose role may only read the registry is refused the write:
// discovery status works for it, discovery new and clusterd's registration do not. Granted what
// the line says, the refused member starts.
func TestDiscoveryRefusesANonRootUser(t *testing.T) {
	t.Parallel()
	for _, scheme := range discoverySchemes {
		t.Run(scheme, func(t *testing.T) {
			d := startDiscoveryService(t, scheme)
			d.etcdctl(t, "user", "add", "nobody:nobodypw")
			d.etcdctl(t, "role", "add", "registry-reader")
			d.etcdctl(t, "role", "grant-permission", "--prefix", "registry-reader", "read", "/_etcd/registry/")
			d.etcdctl(t, "user", "add", "reader:readerpw")
			d.etcdctl(t, "user", "grant-role", "reader", "registry-reader")
			d.enableAuth(t)
			root := []string{"--user=root", "--password=rootpw"}
			token := d.newToken(t, 1, root...)
			c := clusterdCluster(t)
			for _, tt := range []struct {
				user, password string
				status         int // discovery status's exit code
			}{
				{"nobody", "nobodypw", 21},
				{"reader", "readerpw", 0},
			} {
				ctl := d.ctl(t, "--user="+tt.user, "--password="+tt.password)
				if r := ctl.run("discovery", "new", "--size=3"); r.code != 21 || r.stderr != "Error: etcdserver: permission denied\n" || r.stdout != "" {
					t.Errorf("%s: discovery new: %v", tt.user, r)
				}
				r := ctl.run("discovery", "status", token)
				switch {
				case r.code != tt.status:
					t.Errorf("%s: discovery status: %v; want exit %d", tt.user, r, tt.status)
				case r.code == 21 && (r.stderr != "Error: etcdserver: permission denied\n" || r.stdout != ""):
					t.Errorf("%s: discovery status: %v", tt.user, r)
				}

				startWithToken(t, c, tt.user, d.addr, token, append(d.memberFlags(), "--discovery-user="+tt.user, "--discovery-password="+tt.password)...)
				exit, line, stderr := refusal(t, c, tt.user)
				if exit.Code != 1 || !strings.HasPrefix(line, "clusterd: discovery: the discovery service at "+d.addr+` refused user "`+tt.user+`" the keys of discovery token "`+token+`" (etcdserver: permission denied); nothing was registered`) ||
					!strings.Contains(line, "readwrite on the keys with prefix /_etcd/registry/"+token+"/") {
					t.Errorf("%s: clusterd: %v: %s", tt.user, exit, line)
				}
				t.Logf("clusterd as %s: %s", tt.user, line)
				if strings.Contains(stderr, tt.password) {
					t.Errorf("%s: the password was printed:\n%s", tt.user, stderr)
				}
				nothingWritten(t, c, tt.user)
			}
			rootCtl := d.ctl(t, root...)
			if st := rootCtl.run("discovery", "status", token); st.code != 0 || !strings.HasSuffix(st.stdout, "registered: 0\n") {
				t.Errorf("a refused member registered: %v", st)
			}

			// What the line says to grant is enough: the reader's member starts, alone in its cluster.
			d.etcdctl(t, "--user=root:rootpw", "role", "grant-permission", "--prefix", "registry-reader", "readwrite", "/_etcd/registry/"+token+"/")
			if err := c.Restart("reader"); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitStarted(waitTimeout, "reader"); err != nil {
				t.Fatal(err)
			}
			if st := rootCtl.run("discovery", "status", token); st.code != 0 || !strings.Contains(st.stdout, "registered: 1\n") || !strings.Contains(st.stdout, ", reader, ") {
				t.Errorf("status: %v", st)
			}
		})
	}
}
