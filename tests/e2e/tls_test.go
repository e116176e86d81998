package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// These tests run real clusterd processes with TLS and client-certificate authentication on
// both ports, as kubeadm sets etcd up, and talk to them with etcd's own gRPC client stubs.

const tlsWait = 20 * time.Second

// newTLSCluster is a TLS cluster with no member yet: a CA of its own, and on failure every
// member's state and the end of its stderr in the log.
func newTLSCluster(t *testing.T) (*cluster.Cluster, *testpki.CA) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testpki.NewCA(dir, "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return newCluster(t, dir, ca), ca
}

// newCluster is a cluster of clusterd processes in dir with no member yet, with TLS from ca (nil:
// plain), and on failure every member's state and the end of its stderr in the log.
func newCluster(t *testing.T, dir string, ca *testpki.CA) *cluster.Cluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building clusterd: %v", buildErr)
	}
	// The environment is exactly PATH: no ETCD_* variable of the developer's reaches clusterd.
	c := cluster.New(cluster.Config{
		Server: filepath.Join(binDir, "clusterd"), Dir: dir, TLS: ca,
		Env: []string{"PATH=" + os.Getenv("PATH")}, Logf: t.Logf,
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Describe())
			for _, m := range c.Members() {
				t.Logf("%s's stderr ends:\n%s", m.Name, proc.Tail(m.Stderr, 15))
			}
		}
		c.Close()
	})
	return c
}

// tlsCluster starts n members of a TLS cluster, each with extra flags, and waits until every
// one is listed as started: etcd's member list names a member only from then on, and the tests
// read names from it.
func tlsCluster(t *testing.T, n int, extra ...string) (*cluster.Cluster, *testpki.CA) {
	t.Helper()
	c, ca := newTLSCluster(t)
	if _, err := c.Bootstrap(n, extra); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, cluster.BootstrapNames(n)...); err != nil {
		t.Fatal(err)
	}
	return c, ca
}

// client dials m's client port with cfg and returns etcd's Cluster client.
func client(t *testing.T, m *cluster.Member, cfg *tls.Config) pb.ClusterClient {
	return pb.NewClusterClient(conn(t, m, cfg))
}

func conn(t *testing.T, m *cluster.Member, cfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+m.ClientAddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// clientTLS is a client config trusting ca and presenting pair (none when nil).
func clientTLS(t *testing.T, ca *testpki.CA, pair *testpki.Pair) *tls.Config {
	t.Helper()
	cfg, err := ca.ClientConfig(pair)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func issue(t *testing.T, f func(string, ...testpki.Option) (*testpki.Pair, error), cn string, opts ...testpki.Option) *testpki.Pair {
	t.Helper()
	p, err := f(cn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// phaseTwo is the environment `member add` prints, built from its answer.
func phaseTwo(name string, resp *pb.MemberAddResponse, names map[uint64]string) []string {
	var ic []string
	for _, m := range resp.GetMembers() {
		n := names[m.GetID()]
		if m.GetID() == resp.GetMember().GetID() {
			n = name
		}
		for _, u := range m.GetPeerURLs() {
			ic = append(ic, n+"="+u)
		}
	}
	return []string{
		"ETCD_NAME=" + name,
		"ETCD_INITIAL_CLUSTER=" + strings.Join(ic, ","),
		"ETCD_INITIAL_ADVERTISE_PEER_URLS=" + strings.Join(resp.GetMember().GetPeerURLs(), ","),
		"ETCD_INITIAL_CLUSTER_STATE=existing",
	}
}

// names maps the IDs of the listed members to their names.
func names(t *testing.T, cl pb.ClusterClient) map[uint64]string {
	t.Helper()
	list, err := cl.MemberList(ctx(t), &pb.MemberListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, m := range list.GetMembers() {
		out[m.GetID()] = m.GetName()
	}
	return out
}

// The two-phase walk-through over mutual TLS on both ports, then kill -9 and restart.
func TestTLSWalkthrough(t *testing.T) {
	c, ca := tlsCluster(t, 3)
	m0 := c.Members()[0]
	admin := client(t, m0, clientTLS(t, ca, issue(t, ca.Client, "root")))

	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m3.PeerURL, "https://") {
		t.Fatalf("peer URL %s", m3.PeerURL)
	}
	known := names(t, admin)
	add, err := admin.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{m3.PeerURL}, IsLearner: true})
	if err != nil {
		t.Fatal(err)
	}
	env := phaseTwo("infra3", add, known)
	for _, kv := range env[1:3] {
		if strings.Contains(kv, "http://") {
			t.Errorf("phase two over TLS names a plain URL: %s", kv)
		}
	}
	if err := c.Start("infra3", m3.ListenArgs(), env); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, "infra3"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCaughtUp(tlsWait, "infra3"); err != nil {
		t.Fatal(err)
	}
	id := add.GetMember().GetID()
	err = proc.Poll(tlsWait, "promote infra3", func() (bool, error) {
		_, err := admin.MemberPromote(ctx(t), &pb.MemberPromoteRequest{ID: id})
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.MemberUpdate(ctx(t), &pb.MemberUpdateRequest{ID: id, PeerURLs: []string{m3.PeerURL}}); err != nil {
		t.Fatal(err)
	}

	// kill -9 a voter and bring it back over TLS.
	if err := c.Kill("infra1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart("infra1"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, "infra1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(tlsWait); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.MemberRemove(ctx(t), &pb.MemberRemoveRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	if exit, err := c.WaitExit("infra3", tlsWait); err != nil || exit.Code != 3 {
		t.Errorf("removed member: %v %v", exit, err)
	}
}

// A client without a certificate, with one from another CA, or with an expired one is refused
// at the handshake; the member keeps serving.
func TestTLSClientRefusals(t *testing.T) {
	c, ca := tlsCluster(t, 1)
	m := c.Members()[0]
	other, err := testpki.NewCA(t.TempDir(), "other", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"no certificate", clientTLS(t, ca, nil)},
		{"another CA", clientTLS(t, ca, issue(t, other.Client, "root"))},
		{"expired", clientTLS(t, ca, issue(t, ca.Client, "root", testpki.Expired()))},
	} {
		_, err := client(t, m, tt.cfg).MemberList(ctx(t), &pb.MemberListRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s: got %v, want the handshake refused", tt.name, err)
		}
	}
	// Plain text to the TLS port is refused too.
	plain, err := grpc.NewClient("passthrough:///"+m.ClientAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := pb.NewClusterClient(plain).MemberList(ctx(t), &pb.MemberListRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plain text to a TLS port: %v", err)
	}
	if _, err := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "ops"))).MemberList(ctx(t), &pb.MemberListRequest{}); err != nil {
		t.Errorf("a good certificate: %v", err)
	}
}

// With --admin-cert-allowed-cn, other certificates may list but not change the membership.
func TestTLSAdminCN(t *testing.T) {
	c, ca := tlsCluster(t, 1, "--admin-cert-allowed-cn=root")
	m := c.Members()[0]
	ops := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "ops")))
	if _, err := ops.MemberList(ctx(t), &pb.MemberListRequest{}); err != nil {
		t.Fatalf("member list with a non-admin certificate: %v", err)
	}
	_, err := ops.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true})
	if st, _ := status.FromError(err); st.Code() != codes.PermissionDenied || st.Message() != "etcdserver: permission denied" {
		t.Fatalf("member add with a non-admin certificate: %v", err)
	}
	snap, err := pb.NewMaintenanceClient(conn(t, m, clientTLS(t, ca, issue(t, ca.Client, "ops2")))).Snapshot(ctx(t), &pb.SnapshotRequest{})
	if err == nil {
		_, err = snap.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("snapshot with a non-admin certificate: %v", err)
	}
	root := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "root")))
	add, err := root.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true})
	if err != nil {
		t.Fatalf("member add as root: %v", err)
	}
	if _, err := root.MemberRemove(ctx(t), &pb.MemberRemoveRequest{ID: add.GetMember().GetID()}); err != nil {
		t.Fatal(err)
	}
}

// A member whose peer certificate the peer CA did not sign, or whose CN is not allowed, cannot
// join, says why, and the member it tries logs the refusal once, not once per attempt.
func TestTLSPeerRefused(t *testing.T) {
	const cns = "--peer-cert-allowed-cn=infra0,infra1"
	for _, tt := range []struct {
		name  string
		allow string // the allow list of both members
		cert  func(t *testing.T, ca *testpki.CA) *testpki.Pair
		want  string // in the one refusal line
	}{
		{"disallowed CN", cns, func(t *testing.T, ca *testpki.CA) *testpki.Pair { return issue(t, ca.Peer, "intruder") }, "cn=intruder"},
		{"another CA", cns, func(t *testing.T, _ *testpki.CA) *testpki.Pair {
			other, err := testpki.NewCA(t.TempDir(), "other", testpki.ECDSAP256)
			if err != nil {
				t.Fatal(err)
			}
			return issue(t, other.Peer, "infra1")
		}, "issuer=other"},
		{"disallowed host name", "--peer-cert-allowed-hostname=localhost", func(t *testing.T, ca *testpki.CA) *testpki.Pair {
			return issue(t, ca.Peer, "infra1", testpki.WrongHost())
		}, "matches no host name of --peer-cert-allowed-hostname=localhost"},
	} {
		t.Run(tt.name, func(t *testing.T) { peerRefused(t, tt.allow, tt.cert, tt.want) })
	}
}

func peerRefused(t *testing.T, allow string, cert func(*testing.T, *testpki.CA) *testpki.Pair, want string) {
	c, ca := tlsCluster(t, 1, allow)
	m0 := c.Members()[0]
	admin := client(t, m0, clientTLS(t, ca, issue(t, ca.Client, "root")))
	m1, err := c.Alloc("infra1")
	if err != nil {
		t.Fatal(err)
	}
	m1.Peer = cert(t, ca)
	known := names(t, admin)
	add, err := admin.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{m1.PeerURL}, IsLearner: true})
	if err != nil {
		t.Fatal(err)
	}
	args := append(m1.ListenArgs(), allow)
	if err := c.Start("infra1", args, phaseTwo("infra1", add, known)); err != nil {
		t.Fatal(err)
	}
	exit, err := c.WaitExit("infra1", tlsWait)
	if err != nil || exit.Code != 1 {
		t.Fatalf("the refused member: %v %v\n%s", exit, err, proc.Tail(m1.Stderr, 5))
	}
	if tail := proc.Tail(m1.Stderr, 1); !strings.Contains(tail, "cannot reach any member of --initial-cluster to join: "+m0.PeerURL) ||
		!strings.Contains(tail, `"rejected connection"`) {
		t.Errorf("the refused member's last line does not say where to look: %s", tail)
	}
	// The refused member may end before m0 has logged its refusal: with TLS 1.3 the client's
	// side of the handshake is over before the server checks the certificate.
	waitLog(t, m0, "rejected connection")
	log, _ := os.ReadFile(m0.Stderr)
	var refusals []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "rejected connection") {
			refusals = append(refusals, l)
		}
	}
	if len(refusals) != 1 || !strings.Contains(refusals[0], want) {
		t.Errorf("want one refusal with %q, got %d:\n%s", want, len(refusals), strings.Join(refusals, "\n"))
	}
}

// A certificate renewed on disk serves the next connection without a restart, on both ports.
func TestTLSRotation(t *testing.T) {
	c, ca := tlsCluster(t, 1)
	m := c.Members()[0]
	harness := issue(t, ca.Client, "reader")
	serial := func(addr string) string {
		t.Helper()
		cfg := clientTLS(t, ca, harness)
		cfg.ServerName = "127.0.0.1"
		conn, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	peerAddr := strings.TrimPrefix(m.PeerURL, "https://")
	oldClient, oldPeer := serial(m.ClientAddr), serial(peerAddr)
	if oldClient != m.Server.Cert.SerialNumber.String() || oldPeer != m.Peer.Cert.SerialNumber.String() {
		t.Fatal("the member does not serve the certificates it was started with")
	}
	newServer, newPeer := issue(t, ca.Server, m.Name), issue(t, ca.Peer, m.Name)
	if err := newServer.WriteTo(m.Server.CertFile, m.Server.KeyFile); err != nil {
		t.Fatal(err)
	}
	if err := newPeer.WriteTo(m.Peer.CertFile, m.Peer.KeyFile); err != nil {
		t.Fatal(err)
	}
	if got := serial(m.ClientAddr); got != newServer.Cert.SerialNumber.String() {
		t.Errorf("client port serves serial %s after the renewal, want %s", got, newServer.Cert.SerialNumber)
	}
	if got := serial(peerAddr); got != newPeer.Cert.SerialNumber.String() {
		t.Errorf("peer port serves serial %s after the renewal, want %s", got, newPeer.Cert.SerialNumber)
	}
	if _, err := cluster.MemberList(m, true); err != nil {
		t.Errorf("after the renewal: %v", err)
	}
	if !m.Running() {
		t.Error("the member restarted or stopped")
	}
}

// A port may listen on plain and TLS URLs side by side, as etcd allows (for a migration). The
// admin check applies to both: a plain caller has no certificate, so no CN, and may only read.
func TestTLSBesidePlain(t *testing.T) {
	c, ca := newTLSCluster(t)
	m, err := c.Alloc("infra0")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	plainAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := append([]string{
		"--name=infra0", "--data-dir=" + m.DataDir, "--initial-cluster=infra0=" + m.PeerURL,
		"--listen-peer-urls=" + m.PeerURL, "--initial-advertise-peer-urls=" + m.PeerURL,
		"--listen-client-urls=" + m.ClientURL() + ",http://" + plainAddr,
		"--advertise-client-urls=" + m.ClientURL() + ",http://" + plainAddr,
		"--admin-cert-allowed-cn=root",
	}, m.TLSArgs()...)
	if err := c.Start("infra0", args, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(tlsWait); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+plainAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	plain := pb.NewClusterClient(cc)
	// The member publishes its client URLs once it runs, a moment after it leads: wait for them.
	err = proc.Poll(tlsWait, "both client URLs published", func() (bool, error) {
		list, err := plain.MemberList(ctx(t), &pb.MemberListRequest{})
		if err != nil {
			return true, fmt.Errorf("member list in plain text: %v", err)
		}
		if urls := list.GetMembers()[0].GetClientURLs(); len(urls) != 2 {
			return false, fmt.Errorf("client URLs %v, want the https and the http one", urls)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = plain.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("member add in plain text with admin CNs set: %v", err)
	}
	root := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "root")))
	add, err := root.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true})
	if err != nil {
		t.Fatalf("member add over TLS as root: %v", err)
	}
	if _, err := root.MemberRemove(ctx(t), &pb.MemberRemoveRequest{ID: add.GetMember().GetID()}); err != nil {
		t.Fatal(err)
	}
}
