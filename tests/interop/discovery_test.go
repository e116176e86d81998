package interop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/server/discovery"
)

// discoverySchemes are the ways the tests that run against both reach the discovery service:
// plain http, and TLS with client certificates.
var discoverySchemes = []string{"http", "https"}

// discoveryService is a one-member etcd 3.7.1 discovery service, served over plain http or over
// TLS with client-certificate authentication, and how clusterctl, etcdctl and the members reach
// it.
type discoveryService struct {
	c        *cluster.Cluster
	addr     string        // host:port, the members' --discovery-endpoints
	endpoint string        // clusterctl's and etcdctl's --endpoints: addr, or https://addr
	ca       *testpki.CA   // nil over plain http
	client   *testpki.Pair // the certificate clusterctl, etcdctl and the members present over TLS
}

// startDiscoveryService starts the service over scheme, "http" or "https".
func startDiscoveryService(t *testing.T, scheme string) *discoveryService {
	t.Helper()
	needBinaries(t)
	d := &discoveryService{}
	switch scheme {
	case "http":
	case "https":
		var err error
		if d.ca, err = testpki.NewCA(t.TempDir(), "discovery-ca", testpki.ECDSAP256); err != nil {
			t.Fatal(err)
		}
		if d.client, err = d.ca.Client("discovery-client"); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no discovery service over %q", scheme)
	}
	d.c = cluster.New(cluster.Config{
		Server: etcd.Etcd,
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Token:  "discovery-service",
		Logf:   t.Logf,
		TLS:    d.ca,
	})
	t.Cleanup(d.c.Close)
	ms, err := d.c.Bootstrap(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	d.addr = ms[0].ClientAddr
	d.endpoint = d.addr
	if d.ca != nil {
		d.endpoint = ms[0].ClientURL()
	}
	return d
}

// tlsFlags are clusterctl's and etcdctl's TLS flags for the service; none over plain http.
func (d *discoveryService) tlsFlags() []string {
	if d.ca == nil {
		return nil
	}
	return []string{"--cacert=" + d.ca.CertFile, "--cert=" + d.client.CertFile, "--key=" + d.client.KeyFile}
}

// ctl is clusterctl with the service's endpoint and TLS flags, and the global flags in pre.
func (d *discoveryService) ctl(t *testing.T, pre ...string) cli {
	return cli{t: t, pre: append(append([]string{"--endpoints=" + d.endpoint}, d.tlsFlags()...), pre...)}
}

// etcdctl runs etcdctl against the service and fails the test unless it succeeds.
func (d *discoveryService) etcdctl(t *testing.T, args ...string) {
	t.Helper()
	r := runCLI(t, etcd.Etcdctl, append(append([]string{"--endpoints=" + d.endpoint}, d.tlsFlags()...), args...)...)
	if r.code != 0 {
		t.Fatalf("etcdctl %s: %v", strings.Join(args, " "), r)
	}
}

// enableAuth turns etcd's auth on, with the user root (password rootpw) holding the root role.
func (d *discoveryService) enableAuth(t *testing.T) {
	t.Helper()
	d.etcdctl(t, "role", "add", "root")
	d.etcdctl(t, "user", "add", "root:rootpw")
	d.etcdctl(t, "user", "grant-role", "root", "root")
	d.etcdctl(t, "auth", "enable")
}

// memberFlags are a member's --discovery-* TLS flags; none over plain http.
func (d *discoveryService) memberFlags() []string {
	if d.ca == nil {
		return nil
	}
	return []string{"--discovery-cacert=" + d.ca.CertFile, "--discovery-cert=" + d.client.CertFile,
		"--discovery-key=" + d.client.KeyFile}
}

// newToken creates a token for size members with the real clusterctl, given the global flags in
// pre (a user, when auth is on).
func (d *discoveryService) newToken(t *testing.T, size int, pre ...string) string {
	t.Helper()
	r := d.ctl(t, pre...).run("discovery", "new", fmt.Sprintf("--size=%d", size))
	if r.code != 0 {
		t.Fatalf("discovery new: %v", r)
	}
	return strings.TrimSpace(r.stdout)
}

// waitRegistered waits until the token has n members registered.
func (d *discoveryService) waitRegistered(t *testing.T, token string, n int, pre ...string) {
	t.Helper()
	ctl := d.ctl(t, pre...)
	if err := proc.Poll(waitTimeout, fmt.Sprintf("%d registered", n), func() (bool, error) {
		return strings.Contains(ctl.run("discovery", "status", token).stdout, fmt.Sprintf("registered: %d\n", n)), nil
	}); err != nil {
		t.Fatal(err)
	}
}

func discoveryConfig(endpoint, token string) discovery.Config {
	cfg := discovery.DefaultConfig()
	cfg.Token, cfg.Endpoints = token, []string{endpoint}
	cfg.WaitTimeout = waitTimeout
	cfg.ProgressInterval = time.Second
	return cfg
}

type joined struct {
	cluster string
	err     error
}

// join runs JoinCluster for member name at a made-up peer URL of its own.
func join(ctx context.Context, t *testing.T, cfg discovery.Config, name string) joined {
	lg := slog.New(slog.NewTextHandler(testWriter{t, name}, nil))
	s, err := discovery.JoinCluster(ctx, cfg, name, []string{peerURL(name)}, lg)
	return joined{s, err}
}

func sameEntries(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

func peerURL(name string) string {
	return "http://127.0.0.1:1" + strings.TrimPrefix(name, "infra") + "380"
}

type testWriter struct {
	t    *testing.T
	name string
}

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s: %s", w.name, strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestDiscoveryThroughEtcd runs the clusterd side of discovery against a real etcd: members that
// register at once, one that stopped while it waited and started again, one too many, a reused
// token, and a member whose data was lost.
func TestDiscoveryThroughEtcd(t *testing.T) {
	t.Parallel()
	d := startDiscoveryService(t, "http")
	token := d.newToken(t, 3)
	cfg := discoveryConfig(d.addr, token)
	ctl := d.ctl(t)
	want := "infra0=" + peerURL("infra0") + ",infra1=" + peerURL("infra1") + ",infra2=" + peerURL("infra2")

	// infra0 registers and waits; it is stopped while waiting (kill -9 of a member that has not
	// written its data directory yet), as its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan joined, 1)
	go func() { first <- join(ctx, t, cfg, "infra0") }()
	d.waitRegistered(t, token, 1)
	cancel()
	if r := <-first; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("stopped infra0: %q, %v", r.cluster, r.err)
	}

	// infra1 and infra2 register at once; infra0 starts again with the same name and URL.
	var wg sync.WaitGroup
	got := make([]joined, 3)
	for i, name := range []string{"infra1", "infra2", "infra0"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = join(context.Background(), t, cfg, name)
		}()
	}
	wg.Wait()
	// The same string for all three, in the order they registered (infra0 first, as it
	// registered before it stopped).
	for i, r := range got {
		if r.err != nil || r.cluster != got[0].cluster || !sameEntries(r.cluster, want) || !strings.HasPrefix(r.cluster, "infra0=") {
			t.Errorf("member %d: %q, %v; want the members of %q, infra0 first", i, r.cluster, r.err, want)
		}
	}

	// A fourth member is refused, and told to use member add.
	start := time.Now()
	r := join(context.Background(), t, cfg, "infra3")
	var full *discovery.FullError
	if !errors.As(r.err, &full) || !strings.Contains(r.err.Error(), "discovery: cluster is full") || !strings.Contains(r.err.Error(), "clusterctl member add") {
		t.Errorf("fourth member: %q, %v", r.cluster, r.err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the refusal took %v", time.Since(start))
	}
	// A member that bootstrapped and comes back with an empty data directory is refused too.
	var boot *discovery.BootstrappedError
	if r := join(context.Background(), t, cfg, "infra1"); !errors.As(r.err, &boot) {
		t.Errorf("infra1 again after bootstrap: %q, %v", r.cluster, r.err)
	}
	// The token cannot be created again.
	res := ctl.run("discovery", "new", "--token="+token)
	if res.code != 11 || !strings.Contains(res.stderr, "is already in use") || strings.Count(res.stderr, "\n") != 1 {
		t.Errorf("discovery new with a used token: %v", res)
	}
	// status shows the three members and the refused fourth nowhere (it wrote nothing).
	res = ctl.run("discovery", "status", token, "-w", "json")
	if res.code != 0 || !strings.Contains(res.stdout, `"registered":3,"full":true`) || strings.Contains(res.stdout, "infra3") {
		t.Errorf("status: %v", res)
	}
}

// TestDiscoveryRefusesATakenName: a member whose name another member registered is refused
// before it writes anything.
func TestDiscoveryRefusesATakenName(t *testing.T) {
	t.Parallel()
	d := startDiscoveryService(t, "http")
	cfg := discoveryConfig(d.addr, d.newToken(t, 3))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go join(ctx, t, cfg, "infra0")
	d.waitRegistered(t, cfg.Token, 1)
	lg := slog.New(slog.DiscardHandler)
	_, err := discovery.JoinCluster(context.Background(), cfg, "infra0", []string{"http://127.0.0.1:9"}, lg)
	var taken *discovery.TakenError
	if !errors.As(err, &taken) || !strings.Contains(err.Error(), `name "infra0" is already registered`) {
		t.Errorf("same name, other URL: %v", err)
	}
	_, err = discovery.JoinCluster(context.Background(), cfg, "other", []string{peerURL("infra0")}, lg)
	if !errors.As(err, &taken) {
		t.Errorf("same URL, other name: %v", err)
	}
	r := d.ctl(t).run("discovery", "status", cfg.Token)
	if !strings.Contains(r.stdout, "registered: 1\n") || strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("a refused member wrote something:\n%v", r)
	}
}

// TestDiscoveryServiceDown: one line, quickly, and nothing else.
func TestDiscoveryServiceDown(t *testing.T) {
	t.Parallel()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := discoveryConfig(fmt.Sprintf("127.0.0.1:%d", ports[0]), "tok")
	// The request timeout stays at its default: the dial timeout alone bounds the refusal.
	cfg.DialTimeout = time.Second
	start := time.Now()
	_, err = discovery.JoinCluster(context.Background(), cfg, "infra0", []string{peerURL("infra0")}, nil)
	var down *discovery.UnreachableError
	if !errors.As(err, &down) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cannot reach the discovery service") {
		t.Errorf("%v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	t.Logf("%v", err)
}

// TestEtcdBootstrapsWithClusterctlToken: three real etcd members bootstrap through a token
// clusterctl created, and clusterctl discovery status shows them; over plain http and over TLS
// with client certificates, the members given etcd's own --discovery-* TLS flags.
func TestEtcdBootstrapsWithClusterctlToken(t *testing.T) {
	t.Parallel()
	for _, scheme := range discoverySchemes {
		t.Run(scheme, func(t *testing.T) { etcdBootstrapsWithClusterctlToken(t, scheme) })
	}
}

func etcdBootstrapsWithClusterctlToken(t *testing.T, scheme string) {
	d := startDiscoveryService(t, scheme)
	token := d.newToken(t, 3)
	c := cluster.New(cluster.Config{
		Server: etcd.Etcd,
		Dir:    t.TempDir(),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Logf:   t.Logf,
	})
	t.Cleanup(c.Close)
	names := cluster.BootstrapNames(3)
	for _, name := range names {
		m, err := c.Alloc(name)
		if err != nil {
			t.Fatal(err)
		}
		args := append(m.BaseArgs(), "--initial-cluster-state=new", "--discovery-token="+token, "--discovery-endpoints="+d.addr)
		args = append(args, d.memberFlags()...)
		if err := c.Start(name, args, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitStarted(2*waitTimeout, names...); err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(binDir, "clusterctl")
	list := runCLI(t, ctl, "--endpoints="+cluster.Endpoints(c.Members()), "member", "list")
	if list.code != 0 || strings.Count(list.stdout, ", started, ") != 3 {
		t.Fatalf("member list: %v", list)
	}
	r := d.ctl(t).run("discovery", "status", token)
	if r.code != 0 || !strings.Contains(r.stdout, "size: 3\nregistered: 3\n") {
		t.Fatalf("status: %v", r)
	}
	for _, m := range c.Members() {
		if !strings.Contains(r.stdout, ", "+m.Name+", "+m.PeerURL+", member\n") {
			t.Errorf("status does not show %s at %s", m.Name, m.PeerURL)
		}
	}
	// The IDs in the registry are the members' own: etcd registered under its member IDs.
	for _, m := range c.Members() {
		id := mustID(t, c, m.Name)
		if !strings.Contains(r.stdout, fmt.Sprintf("%016x, %s, ", id, m.Name)) {
			t.Errorf("%s registered under another ID than %016x", m.Name, id)
		}
	}
}
