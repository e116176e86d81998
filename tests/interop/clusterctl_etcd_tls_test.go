package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// kubeadmPKI is what kubeadm makes for etcd: one CA, RSA 2048, a server certificate (server and
// client use, IP SANs) and a peer certificate per member, and client certificates for the
// callers.
type kubeadmPKI struct {
	ca *testpki.CA
	// admin is the client certificate clusterctl uses (kubeadm's healthcheck-client has CN
	// kube-etcd-healthcheck-client); noCN is one without a CN, which etcd with auth cannot
	// take for a user name.
	admin, noCN *testpki.Pair
	members     map[string]memberCerts
}

type memberCerts struct{ server, peer *testpki.Pair }

func newKubeadmPKI(t *testing.T) *kubeadmPKI {
	t.Helper()
	ca, err := testpki.NewCA(t.TempDir(), "etcd-ca", testpki.RSA2048)
	if err != nil {
		t.Fatal(err)
	}
	must := func(p *testpki.Pair, err error) *testpki.Pair {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return &kubeadmPKI{
		ca:      ca,
		admin:   must(ca.Client("kube-etcd-healthcheck-client")),
		noCN:    must(ca.Client("")),
		members: map[string]memberCerts{},
	}
}

func (p *kubeadmPKI) certs(t *testing.T, name string) memberCerts {
	t.Helper()
	if c, ok := p.members[name]; ok {
		return c
	}
	server, err := p.ca.Peer(name) // kubeadm's server.crt carries both usages too
	if err != nil {
		t.Fatal(err)
	}
	peer, err := p.ca.Peer(name)
	if err != nil {
		t.Fatal(err)
	}
	c := memberCerts{server, peer}
	p.members[name] = c
	return c
}

// tlsMember is a member's https URLs, from the ports the cluster allocated.
type tlsMember struct {
	name, clientURL, peerURL string
	m                        *cluster.Member
}

func allocTLS(t *testing.T, c *cluster.Cluster, name string) tlsMember {
	t.Helper()
	m, err := c.Alloc(name)
	if err != nil {
		t.Fatal(err)
	}
	return tlsMember{name: name, clientURL: "https://" + m.ClientAddr, peerURL: strings.Replace(m.PeerURL, "http://", "https://", 1), m: m}
}

// tlsArgs are the flags a kubeadm etcd has that no printed environment carries: where to listen
// and its TLS settings on both ports.
func (p *kubeadmPKI) tlsArgs(t *testing.T, m tlsMember) []string {
	c := p.certs(t, m.name)
	return []string{
		"--data-dir=" + m.m.DataDir,
		"--listen-client-urls=" + m.clientURL,
		"--advertise-client-urls=" + m.clientURL,
		"--listen-peer-urls=" + m.peerURL,
		"--cert-file=" + c.server.CertFile, "--key-file=" + c.server.KeyFile,
		"--trusted-ca-file=" + p.ca.CertFile, "--client-cert-auth=true",
		"--peer-cert-file=" + c.peer.CertFile, "--peer-key-file=" + c.peer.KeyFile,
		"--peer-trusted-ca-file=" + p.ca.CertFile, "--peer-client-cert-auth=true",
	}
}

// startTLSEtcd bootstraps three etcd members as kubeadm sets them up.
func startTLSEtcd(t *testing.T, p *kubeadmPKI) (*cluster.Cluster, []tlsMember) {
	t.Helper()
	c := cluster.New(cluster.Config{
		Server: etcd.Etcd,
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Logf:   t.Logf,
		Token:  "tls-interop",
	})
	t.Cleanup(c.Close)
	var ms []tlsMember
	var ic []string
	for i := range 3 {
		m := allocTLS(t, c, fmt.Sprintf("infra%d", i))
		ms = append(ms, m)
		ic = append(ic, m.name+"="+m.peerURL)
	}
	for _, m := range ms {
		args := append(p.tlsArgs(t, m), "--name="+m.name, "--initial-advertise-peer-urls="+m.peerURL,
			"--initial-cluster="+strings.Join(ic, ","), "--initial-cluster-state=new", "--initial-cluster-token=tls-interop")
		if err := c.Start(m.name, args, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c, ms
}

// cli runs clusterctl with the given environment added to a clean one.
type cli struct {
	t   *testing.T
	env []string
	pre []string // global flags before every command
}

func (c cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	bin := filepath.Join(binDir, "clusterctl")
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, c.pre...), args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.t.TempDir()}, c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.code = ee.ExitCode()
	default:
		c.t.Fatalf("clusterctl %s: %v\n%v", strings.Join(args, " "), err, r)
	}
	c.t.Logf("$ %s clusterctl %s %s\n%v", strings.Join(c.env, " "), strings.Join(c.pre, " "), strings.Join(args, " "), r)
	return r
}

func (c cli) until(retry func(result) bool, args ...string) result {
	c.t.Helper()
	var r result
	err := proc.Poll(waitTimeout, "clusterctl "+strings.Join(args, " "), func() (bool, error) {
		r = c.run(args...)
		if retry(r) {
			return false, fmt.Errorf("%v", r)
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// TestClusterctlManagesTLSEtcd drives etcd 3.7.1 set up as kubeadm sets it up, first by flags,
// then by etcdctl's ETCDCTL_* variables alone: list in every format, add a learner, start it
// from the printed environment plus its TLS flags, promote --wait, update, remove, snapshot save.
// Then with etcd's auth enabled: root succeeds, others get their exit codes.
func TestClusterctlManagesTLSEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	p := newKubeadmPKI(t)
	c, ms := startTLSEtcd(t, p)
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.clientURL)
	}
	endpoints := strings.Join(eps, ",")
	byFlags := cli{t: t, pre: []string{"--endpoints=" + endpoints, "--cacert=" + p.ca.CertFile,
		"--cert=" + p.admin.CertFile, "--key=" + p.admin.KeyFile}}
	byEnv := cli{t: t, env: []string{"ETCDCTL_API=3", "ETCDCTL_ENDPOINTS=" + endpoints, "ETCDCTL_CACERT=" + p.ca.CertFile,
		"ETCDCTL_CERT=" + p.admin.CertFile, "ETCDCTL_KEY=" + p.admin.KeyFile}}

	// all three started, over TLS
	byFlags.until(func(r result) bool { return strings.Count(r.stdout, ", started, ") != 3 }, "member", "list")

	t.Run("flags", func(t *testing.T) { byFlags.t = t; walkTLS(t, byFlags, p, c, ms, "infra3") })
	t.Run("ETCDCTL", func(t *testing.T) { byEnv.t = t; walkTLS(t, byEnv, p, c, ms, "infra4") })
	t.Run("TLS refusals", func(t *testing.T) { tlsRefusals(t, p, ms[0]) })
	t.Run("auth", func(t *testing.T) { byFlags.t = t; authTLS(t, byFlags, p, c, ms) })
}

// tlsRefusals: what a misconfigured clusterctl gets from a kubeadm etcd: exit 20 and one line
// naming the endpoint and saying what to do.
func tlsRefusals(t *testing.T, p *kubeadmPKI, m tlsMember) {
	other, err := testpki.NewCA(t.TempDir(), "other", testpki.RSA2048)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(m.clientURL, "https://")
	cert, key := "--cert="+p.admin.CertFile, "--key="+p.admin.KeyFile
	for _, tc := range []struct {
		name   string
		args   []string
		prefix string
	}{
		{"another CA", []string{"--endpoints=" + m.clientURL, "--cacert=" + other.CertFile, cert, key},
			"Error: " + m.clientURL + ": the server's certificate is signed by an unknown authority: pass --cacert"},
		{"no client certificate", []string{"--endpoints=" + m.clientURL, "--cacert=" + p.ca.CertFile},
			"Error: " + m.clientURL + ": the server requires a client certificate"},
		{"plain to TLS", []string{"--endpoints=http://" + addr},
			"Error: http://" + addr + ": the server expects TLS"},
		{"bare endpoint without TLS flags", []string{"--endpoints=" + addr},
			"Error: " + addr + ": the server expects TLS"},
	} {
		r := cli{t: t}.run(append(tc.args, "member", "list")...)
		if r.code != 20 || r.stdout != "" || !strings.HasPrefix(r.stderr, tc.prefix) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: %v; want exit 20 and one line starting %q", tc.name, r, tc.prefix)
		}
	}
}

func walkTLS(t *testing.T, ctl cli, p *kubeadmPKI, c *cluster.Cluster, ms []tlsMember, name string) {
	// list in every format
	r := ctl.run("member", "list")
	if r.code != 0 || r.stderr != "" || strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("member list: %v", r)
	}
	for _, m := range ms {
		line := regexp.MustCompile(`(?m)^[0-9a-f]{16}, started, ` + m.name + `, ` + regexp.QuoteMeta(m.peerURL) + `, ` + regexp.QuoteMeta(m.clientURL) + `, false$`)
		if !line.MatchString(r.stdout) {
			t.Errorf("member list lacks %s with its https URLs:\n%s", m.name, r.stdout)
		}
	}
	r = ctl.run("member", "list", "-w", "table")
	if r.code != 0 || strings.Count(r.stdout, "| started |") != 3 || len(regexp.MustCompile(`(?m)\|\s+true \|$`).FindAllString(r.stdout, -1)) != 1 {
		t.Errorf("member list -w table: want 3 started rows and one leader: %v", r)
	}
	r = ctl.run("member", "list", "-w", "json")
	var js map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &js) != nil || !strings.Contains(r.stdout, ms[0].clientURL) {
		t.Errorf("member list -w json: %v", r)
	}

	// add a learner with an https peer URL; etcd refuses changes for 5 s after a start (12)
	nm := allocTLS(t, c, name)
	r = ctl.until(codeIs(12), "member", "add", name, "--peer-urls="+nm.peerURL, "--learner")
	if r.code != 0 || !regexp.MustCompile(`\AMember [0-9a-f]{16} added as learner to cluster [0-9a-f]{16}\n\nETCD_NAME="`+name+`"\n`).MatchString(r.stdout) {
		t.Fatalf("member add --learner: %v", r)
	}
	hex := strings.Fields(r.stdout)[1]
	block := envBlock(r.stdout)
	if !strings.Contains(block, `ETCD_INITIAL_ADVERTISE_PEER_URLS="`+nm.peerURL+`"`) {
		t.Errorf("printed environment lacks the https peer URL:\n%s", block)
	}

	// etcd starts from the printed environment plus its TLS flags, and joins over mutual TLS
	env, err := cluster.ParseEnv(block)
	if err != nil {
		t.Fatalf("the printed environment does not parse: %v\n%s", err, block)
	}
	if err := c.Start(name, p.tlsArgs(t, nm), env); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s, started, %s, %s, %s, true\n", hex, name, nm.peerURL, nm.clientURL)
	ctl.until(func(r result) bool { return !strings.Contains(r.stdout, want) }, "member", "list")

	// promote --wait waits for the learner to catch up
	r = ctl.until(codeIs(12), "member", "promote", name, "--wait=60s")
	if r.code != 0 || !strings.Contains(r.stdout, "Member "+hex+" promoted in cluster ") {
		t.Fatalf("member promote --wait: %v", r)
	}

	// update: an alias for the same listener (the peer certificate names localhost too)
	alias := strings.Replace(nm.peerURL, "127.0.0.1", "localhost", 1)
	r = ctl.until(codeIs(12), "member", "update", hex, "--peer-urls="+nm.peerURL+","+alias)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Member "+hex+" updated in cluster ") {
		t.Fatalf("member update: %v", r)
	}

	// snapshot save over TLS
	file := filepath.Join(t.TempDir(), "snap.db")
	r = ctl.run("snapshot", "save", file)
	if st, err := os.Stat(file); r.code != 0 || err != nil || st.Size() == 0 {
		t.Errorf("snapshot save: %v (%v)", r, err)
	}

	// remove by name; etcd's removed member stops by itself
	r = ctl.until(codeIs(12), "member", "remove", name)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Member "+hex+" removed from cluster ") {
		t.Fatalf("member remove: %v", r)
	}
	if _, err := c.WaitExit(name, waitTimeout); err != nil {
		t.Errorf("removed member: %v", err)
	}
}

// authTLS enables etcd's auth with etcdctl (root user and role, and bob without a role) and checks
// what each caller gets from a change.
func authTLS(t *testing.T, ctl cli, p *kubeadmPKI, c *cluster.Cluster, ms []tlsMember) {
	etcdctl := func(args ...string) {
		t.Helper()
		r := runCLI(t, etcd.Etcdctl, append([]string{"--endpoints=" + ms[0].clientURL, "--cacert=" + p.ca.CertFile,
			"--cert=" + p.admin.CertFile, "--key=" + p.admin.KeyFile}, args...)...)
		if r.code != 0 {
			t.Fatalf("etcdctl %s: %v", strings.Join(args, " "), r)
		}
	}
	etcdctl("role", "add", "root")
	etcdctl("user", "add", "root:rootpw")
	etcdctl("user", "grant-role", "root", "root")
	etcdctl("user", "add", "bob:bobpw")
	etcdctl("auth", "enable")

	nm := allocTLS(t, c, "infra5")
	add := []string{"member", "add", "infra5", "--peer-urls=" + nm.peerURL, "--learner"}
	for _, tc := range []struct {
		name   string
		extra  []string
		code   int
		stderr string
	}{
		{"not root", []string{"--user=bob:bobpw"}, 21, "Error: etcdserver: permission denied\n"},
		{"wrong password", []string{"--user=root", "--password=nope"}, 22, "Error: etcdserver: authentication failed, invalid user ID or password\n"},
		{"no user, no CN", []string{"--cert=" + p.noCN.CertFile, "--key=" + p.noCN.KeyFile}, 23, "Error: etcdserver: user name is empty\n"},
		// with client-certificate auth etcd takes the CN for the user when none is given
		{"no user, a CN that is no user", nil, 23, "Error: etcdserver: user name not found\n"},
	} {
		r := ctl.run(append(append([]string{}, tc.extra...), add...)...)
		if r.code != tc.code || r.stderr != tc.stderr || r.stdout != "" {
			t.Errorf("%s: %v; want exit %d and %q", tc.name, r, tc.code, tc.stderr)
		}
		if strings.Contains(r.stderr, "bobpw") || strings.Contains(r.stderr, "nope") {
			t.Errorf("%s: a password was printed: %q", tc.name, r.stderr)
		}
	}
	root := cli{t: t, pre: ctl.pre, env: []string{"ETCDCTL_USER=root", "ETCDCTL_PASSWORD=rootpw"}}
	r := root.run("member", "list")
	if r.code != 0 || strings.Count(r.stdout, ", started, ") != 3 {
		t.Fatalf("root member list: %v", r)
	}
	r = root.until(codeIs(12), add...)
	if r.code != 0 || !strings.Contains(r.stdout, " added as learner to cluster ") {
		t.Fatalf("root member add: %v", r)
	}
	hex := strings.Fields(r.stdout)[1]
	if r = root.until(codeIs(12), "member", "remove", hex); r.code != 0 {
		t.Fatalf("root member remove: %v", r)
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	if r = root.run("snapshot", "save", file); r.code != 0 {
		t.Errorf("root snapshot save: %v", r)
	}
}
