package e2e

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// Who may speak raft on a TLS peer port, row by row as docs/security.md's table says, on real
// members with one CA for both ports (make run TLS=1, kubeadm-like set-ups): clusterctl's client
// certificate is refused at the handshake; a peer certificate speaks for a sender only at a host
// it covers, never for one that names a unix socket, and the member dials a sender its
// membership does not list only at a URL that certificate covers.
func TestPeerIdentitySharedCA(t *testing.T) {
	c, ca := tlsCluster(t, 3)
	target := c.Members()[0]
	cid, to := ids(t, target)
	creds := func(p *testpki.Pair) credentials.TransportCredentials { return peerCreds(t, ca, p) }
	noHost := creds(issue(t, ca.Peer, "nohost", testpki.Hosts()))
	loopback := creds(issue(t, ca.Peer, "loopback"))
	sock := listenCounting(t, filepath.Join(shortDir(t), "s.sock"))
	tcp := listenCounting(t, "")
	unixURL, tcpURL := "unixs://"+sock.Addr(), "https://"+tcp.Addr()
	const stranger = 0x5eed

	// clusterctl's own certificate (client use only) does not get through the handshake.
	err := strangerSays(t, target, creds(issue(t, ca.Client, "root")), cid, stranger, to, term(t, target)+1000, unixURL)
	if err == nil || status.Code(err) == codes.PermissionDenied {
		t.Fatalf("a client certificate on the peer port: %v, want a refused handshake", err)
	}
	waitLog(t, target, `certificate CN \"root\" is for client use only (no serverAuth extended key usage), which the peer port refuses without --peer-cert-allow-client-only`)

	// A certificate that covers no host speaks for no sender: not at a unix socket, which no SAN
	// can cover, and not at a host. The term does not move.
	before := term(t, target)
	for _, url := range []string{unixURL, tcpURL} {
		err := strangerSays(t, target, noHost, cid, stranger, to, before+1000, url)
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("a stranger at %s with a certificate for no host: %v, want PermissionDenied", url, err)
		}
	}
	// A certificate for the members' host speaks for a new member there, and is answered at the
	// URL it covers (the lagging member's case); never at the socket it names beside it, and
	// not for a sender that names only the socket.
	if err := strangerSays(t, target, loopback, cid, stranger, to, before-1, unixURL, tcpURL); err != nil {
		t.Fatalf("a stranger at a host its certificate covers: %v", err)
	}
	if err := proc.Poll(tlsWait, "the member answers the stranger at its covered URL", func() (bool, error) {
		return tcp.Count() > 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	err = strangerSays(t, target, loopback, cid, stranger+1, to, before-1, unixURL)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a stranger naming only a unix socket: %v, want PermissionDenied", err)
	}
	if n := sock.Count(); n != 0 {
		t.Fatalf("the member dialed the socket a stranger named %d times", n)
	}
	if after := term(t, target); after >= before+1000 {
		t.Fatalf("the term moved from %d to %d", before, after)
	}
}

// The same with a CA of the peer port's own, and --peer-cert-allowed-cn: a client certificate
// of the client CA is refused at the handshake; a certificate with the allowed CN speaks for any
// sender, even one at a unix socket, but a member still never dials a socket a sender that is not
// a member named; with --peer-cert-allow-client-only a client certificate of the peer CA gets
// through the handshake.
func TestPeerIdentitySeparateCAs(t *testing.T) {
	dir := t.TempDir()
	clientCA, peerCA := testpki.NewCAs(t, dir, testpki.ECDSAP256)
	peer := issue(t, peerCA.Peer, "peer")
	c := newCluster(t, dir, clientCA)
	if _, err := c.Bootstrap(3, []string{
		"--peer-cert-file=" + peer.CertFile, "--peer-key-file=" + peer.KeyFile, "--peer-trusted-ca-file=" + peerCA.CertFile,
		"--peer-cert-allowed-cn=peer", "--peer-cert-allow-client-only",
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, cluster.BootstrapNames(3)...); err != nil {
		t.Fatal(err)
	}
	target := c.Members()[0]
	cid, to := ids(t, target)
	sock := listenCounting(t, filepath.Join(shortDir(t), "s.sock"))
	const stranger = 0x5eed

	err := strangerSays(t, target, peerCreds(t, peerCA, issue(t, clientCA.Client, "root")), cid, stranger, to, 1, "unixs://"+sock.Addr())
	if err == nil || status.Code(err) == codes.PermissionDenied {
		t.Fatalf("a client certificate of the client CA on the peer port: %v, want a refused handshake", err)
	}
	// (Go's client does not even send a certificate the server's CA list does not name.)
	waitLog(t, target, `msg="rejected connection" port=peer`)
	err = strangerSays(t, target, peerCreds(t, peerCA, issue(t, peerCA.Peer, "other", testpki.Hosts())), cid, stranger, to, 1, "unixs://"+sock.Addr())
	if err == nil || status.Code(err) == codes.PermissionDenied {
		t.Fatalf("a peer certificate with a CN not allowed: %v, want a refused handshake", err)
	}
	before := term(t, target)
	for _, cert := range []*testpki.Pair{issue(t, peerCA.Peer, "peer", testpki.Hosts()), issue(t, peerCA.Client, "peer")} {
		if err := strangerSays(t, target, peerCreds(t, peerCA, cert), cid, stranger, to, before-1, "unixs://"+sock.Addr()); err != nil {
			t.Fatalf("a certificate with the allowed CN (%s): %v", cert.CertFile, err)
		}
	}
	// The stale heartbeat is answered (raft tells an old leader of the newer term): had the
	// member a peer for the stranger, it would dial it now.
	waitLog(t, target, "not answering a sender the membership does not list")
	if n := sock.Count(); n != 0 {
		t.Fatalf("the member dialed the socket a stranger named %d times", n)
	}
}

// With --peer-cert-allowed-hostname the handshake takes only certificates valid for one of the
// names, and such a certificate speaks for any sender at a URL with a host, even one it does not
// cover (here a certificate for localhost alone, at 127.0.0.1); never for one at a unix socket.
func TestPeerIdentityAllowedHostname(t *testing.T) {
	c, ca := tlsCluster(t, 3, "--peer-cert-allowed-hostname=localhost")
	target := c.Members()[0]
	cid, to := ids(t, target)
	named := peerCreds(t, ca, issue(t, ca.Peer, "named", testpki.Hosts("localhost")))
	sock := listenCounting(t, filepath.Join(shortDir(t), "s.sock"))
	const stranger = 0x5eed

	err := strangerSays(t, target, peerCreds(t, ca, issue(t, ca.Peer, "ip", testpki.Hosts("127.0.0.1"))), cid, stranger, to, 1, "https://127.0.0.1:1")
	if err == nil || status.Code(err) == codes.PermissionDenied {
		t.Fatalf("a certificate without an allowed host name: %v, want a refused handshake", err)
	}
	waitLog(t, target, "matches no host name of --peer-cert-allowed-hostname=localhost")
	before := term(t, target)
	if err := strangerSays(t, target, named, cid, stranger, to, before-1, "https://127.0.0.1:1"); err != nil {
		t.Fatalf("a certificate for an allowed host name, at a host it does not cover: %v", err)
	}
	err = strangerSays(t, target, named, cid, stranger+1, to, before+1000, "unixs://"+sock.Addr())
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a certificate for an allowed host name, at a unix socket: %v, want PermissionDenied", err)
	}
	if n := sock.Count(); n != 0 {
		t.Fatalf("the member dialed the socket a stranger named %d times", n)
	}
}

// peerCreds are a stranger's credentials on a peer port served with a certificate ca signed.
func peerCreds(t *testing.T, ca *testpki.CA, p *testpki.Pair) credentials.TransportCredentials {
	t.Helper()
	cert, err := p.TLS()
	if err != nil {
		t.Fatal(err)
	}
	return credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}})
}

// strangerSays sends target one heartbeat of term from sender on a raft stream that names urls
// as the sender's, over creds, and returns how the member ended the stream.
func strangerSays(t *testing.T, target *cluster.Member, creds credentials.TransportCredentials, cid, from, to, term uint64, urls ...string) error {
	t.Helper()
	conn, err := transport.Dial(target.PeerURL, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term)}
	return peerspeak.SendRaft(ctx, conn, urls, []*peerspeak.Envelope{{ClusterID: cid, From: from, To: to, Message: m}})
}

// ids are m's cluster and member IDs.
func ids(t *testing.T, m *cluster.Member) (cid, id uint64) {
	t.Helper()
	st, err := cluster.Status(m)
	if err != nil {
		t.Fatal(err)
	}
	return st.GetHeader().GetClusterId(), st.GetHeader().GetMemberId()
}

func term(t *testing.T, m *cluster.Member) uint64 {
	t.Helper()
	st, err := cluster.Status(m)
	if err != nil {
		t.Fatal(err)
	}
	return st.GetRaftTerm()
}

// listenCounting counts the connections made to a unix socket at path, or (path "") to a port of
// 127.0.0.1, until the test ends.
func listenCounting(t *testing.T, path string) *freeport.Counter {
	t.Helper()
	var l net.Listener
	var err error
	if path == "" {
		l, err = freeport.Listen()
	} else {
		l, err = net.Listen("unix", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := freeport.Counting(l)
	t.Cleanup(func() { c.Close() })
	return c
}

// shortDir is a directory short enough for a unix socket's path (t.TempDir's may not be).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitLog waits until m's stderr holds text.
func waitLog(t *testing.T, m *cluster.Member, text string) {
	t.Helper()
	if err := proc.Poll(tlsWait, m.Name+" logs "+text, func() (bool, error) {
		b, err := os.ReadFile(m.Stderr)
		return err == nil && strings.Contains(string(b), text), err
	}); err != nil {
		t.Fatal(err)
	}
}
