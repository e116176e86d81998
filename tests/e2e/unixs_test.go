package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// A unixs:// client URL serves TLS with client-certificate authentication on a Unix socket, as
// etcd's does. clusterctl takes host:port endpoints only (docs/commands/clusterctl.md), so the
// socket is reached as etcd's clients reach it: by real etcdctl with --cacert/--cert/--key and a
// unixs:// endpoint, and by a gRPC client in this process. etcd's client checks the server's
// certificate against the socket file's base name, so the member's certificate names it too.
func TestUnixsListener(t *testing.T) {
	if buildErr != nil {
		t.Fatalf("building clusterd: %v", buildErr)
	}
	etcd, err := cluster.BuildEtcd()
	if err != nil {
		t.Fatal(err)
	}
	c, ca := newTLSCluster(t)
	m, err := c.Alloc("infra0")
	if err != nil {
		t.Fatal(err)
	}
	const sockName = "infra0.sock"
	sock := filepath.Join(ca.Dir, sockName)
	// The member's server certificate, issued again with the socket's name beside its default
	// SANs and written over the harness's files.
	srv := issue(t, ca.Server, "infra0", testpki.Hosts(append(testpki.DefaultHosts, sockName)...))
	if err := srv.WriteTo(m.Server.CertFile, m.Server.KeyFile); err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--name=infra0", "--data-dir=" + m.DataDir, "--initial-cluster=infra0=" + m.PeerURL,
		"--listen-peer-urls=" + m.PeerURL, "--initial-advertise-peer-urls=" + m.PeerURL,
		"--listen-client-urls=" + m.ClientURL() + ",unixs://" + sock,
		"--advertise-client-urls=" + m.ClientURL(),
	}, m.TLSArgs()...)
	if err := c.Start("infra0", args, nil); err != nil {
		t.Fatal(err)
	}
	// Started: it has published its name, which the list below checks.
	if err := c.WaitStarted(tlsWait, "infra0"); err != nil {
		t.Fatal(err)
	}
	root := issue(t, ca.Client, "root")

	// A gRPC client on the socket: with a client certificate it lists the member; without one
	// the handshake is refused.
	dial := func(cfg credentials.TransportCredentials) pb.ClusterClient {
		cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(cfg))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return pb.NewClusterClient(cc)
	}
	withCert := clientTLS(t, ca, root)
	withCert.ServerName = sockName
	list, err := dial(credentials.NewTLS(withCert)).MemberList(ctx(t), &pb.MemberListRequest{Linearizable: true})
	if err != nil {
		t.Fatalf("member list over unixs with a client certificate: %v", err)
	}
	if ms := list.GetMembers(); len(ms) != 1 || ms[0].GetName() != "infra0" {
		t.Fatalf("member list over unixs: %v", ms)
	}
	noCert := clientTLS(t, ca, nil)
	noCert.ServerName = sockName
	if _, err := dial(credentials.NewTLS(noCert)).MemberList(ctx(t), &pb.MemberListRequest{}); err == nil {
		t.Fatal("member list over unixs without a client certificate was answered")
	}

	// etcdctl, as an operator on the host would use the socket.
	etcdctl := func(args ...string) (string, string, error) {
		cmd := exec.Command(etcd.Etcdctl, append([]string{"--endpoints=unixs://" + sock, "--dial-timeout=2s", "--command-timeout=2s"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	files := []string{"--cacert=" + ca.CertFile, "--cert=" + root.CertFile, "--key=" + root.KeyFile}
	out, errOut, err := etcdctl(append(files, "member", "list")...)
	if err != nil || strings.Count(out, "\n") != 1 || !strings.Contains(out, ", started, infra0, "+m.PeerURL+", ") {
		t.Fatalf("etcdctl member list over unixs: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	out, errOut, err = etcdctl("--cacert="+ca.CertFile, "member", "list")
	if err == nil {
		t.Fatalf("etcdctl member list over unixs without a client certificate succeeded:\n%s", out)
	}
	t.Logf("without a client certificate, etcdctl says: %s", strings.TrimSpace(errOut))
}
