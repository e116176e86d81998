package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
)

const systemdDoc = "../../docs/systemd.md"

// envFileFromDoc returns the environment file docs/systemd.md shows for a TLS member: the block
// after its `<!-- environment file: m4.conf -->` marker, so the file people copy is the one
// started here.
func envFileFromDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(systemdDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- environment file: m4.conf -->\n```sh\n")
	if !ok {
		t.Fatalf("%s: no block after the <!-- environment file: m4.conf --> marker", systemdDoc)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the environment file block does not end", systemdDoc)
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// The TLS environment file of docs/systemd.md, read as systemd reads it, starts a member on its
// own (with the phase-two variables of a founding member beside it, as the unit's second
// EnvironmentFile gives them): TLS with client certificates on both ports, the admin CN set.
// Only its host's paths and address are replaced by a test CA's files and local ports.
func TestSystemdTLSEnvironmentFile(t *testing.T) {
	c, ca := newTLSCluster(t)
	m, err := c.Alloc("m4")
	if err != nil {
		t.Fatal(err)
	}
	peerAddr := strings.TrimPrefix(m.PeerURL, "https://")
	text := strings.NewReplacer(
		"/var/lib/clusterd/m4", m.DataDir,
		"10.0.0.4:2379", m.ClientAddr,
		"10.0.0.4:2380", peerAddr,
		"/etc/clusterd/pki/server.crt", m.Server.CertFile,
		"/etc/clusterd/pki/server.key", m.Server.KeyFile,
		"/etc/clusterd/pki/peer.crt", m.Peer.CertFile,
		"/etc/clusterd/pki/peer.key", m.Peer.KeyFile,
		"/etc/clusterd/pki/ca.crt", ca.CertFile,
	).Replace(envFileFromDoc(t))
	for _, left := range []string{"10.0.0.4", "/etc/clusterd", "/var/lib/clusterd"} {
		if strings.Contains(text, left) {
			t.Fatalf("the environment file of %s names %s where this test replaces nothing:\n%s", systemdDoc, left, text)
		}
	}
	env, err := cluster.ParseEnv(text)
	if err != nil {
		t.Fatalf("the environment file of %s is not read alike by systemd and a shell: %v", systemdDoc, err)
	}
	env = append(env, "ETCD_NAME=m4", "ETCD_INITIAL_CLUSTER=m4="+m.PeerURL,
		"ETCD_INITIAL_ADVERTISE_PEER_URLS="+m.PeerURL, "ETCD_INITIAL_CLUSTER_STATE=new")
	// No flags: ExecStart=/usr/local/bin/clusterd has none.
	if err := c.Start("m4", nil, env); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(tlsWait); err != nil {
		t.Fatal(err)
	}

	root := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "root")))
	// The member publishes its name and client URLs once it runs, a moment after it leads.
	err = proc.Poll(tlsWait, "m4 started", func() (bool, error) {
		list, err := root.MemberList(ctx(t), &pb.MemberListRequest{Linearizable: true})
		if err != nil {
			return true, fmt.Errorf("member list with a client certificate: %v", err)
		}
		if ms := list.GetMembers(); len(ms) != 1 || ms[0].GetName() != "m4" || strings.Join(ms[0].GetClientURLs(), ",") != m.ClientURL() {
			return false, fmt.Errorf("member list: %v", ms)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, m, clientTLS(t, ca, nil)).MemberList(ctx(t), &pb.MemberListRequest{}); err == nil {
		t.Fatal("member list without a client certificate was answered")
	}
	// ETCD_ADMIN_CERT_ALLOWED_CN="root": another CN may list but not change the membership.
	other := client(t, m, clientTLS(t, ca, issue(t, ca.Client, "monitoring")))
	if _, err := other.MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("member add with CN monitoring: %v, want PermissionDenied (ETCD_ADMIN_CERT_ALLOWED_CN=root)", err)
	}
}
