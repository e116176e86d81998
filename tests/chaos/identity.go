package chaos

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// identityStranger is the ID the forged-identity fault speaks raft as: no member's.
const identityStranger = 0x5eed

// forgery is one raft stream the forged-identity fault opens as identityStranger: over creds
// (nil on a plain peer network), naming urls as the sender's, with a heartbeat of a term far
// ahead of the cluster's (ahead) or behind it.
type forgery struct {
	what    string
	creds   credentials.TransportCredentials
	urls    []string
	ahead   bool
	refused bool // a member must refuse it
}

// forgedIdentity speaks raft to every running member's peer port as a sender that is no member
// and names a unix socket of the test's as its peer URL. With -tls: with the test's client
// certificate (client use only, from the CA both ports share), and with peer certificates of the
// CA that cover no host, each with a term 1000 ahead: every member must refuse them, so the
// cluster's term never jumps; and with a peer certificate for the members' host, a term behind,
// which a member takes (a new member at a host the certificate covers). On a plain peer network
// the stranger's stale heartbeat is taken too. In no case may a member dial the socket: a stranger
// is answered only at a URL with a host, and over TLS only at one its certificate covers.
func (f *injector) forgedIdentity(ctx context.Context, sn snapshot) bool {
	if len(sn.clients) == 0 {
		return false
	}
	st, err := memberStatus(ctx, pick(f.rnd, sn.clients), time.Second)
	if err != nil {
		return false
	}
	sock, closeSock, err := countingSocket()
	if err != nil {
		f.c.countStat("forged identity: no unix socket to offer: " + err.Error())
		return false
	}
	defer closeSock()
	forgeries, err := f.forgeries(sock.Addr())
	if err != nil {
		f.c.countStat("forged identity: no certificates: " + err.Error())
		return false
	}
	cluster, term := st.GetHeader().GetClusterId(), max(st.GetRaftTerm(), 2)
	for _, t := range f.peerTargets(sn) {
		for _, fg := range forgeries {
			m := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(identityStranger), To: proto.Uint64(t.id), Term: proto.Uint64(term - 1)}
			if fg.ahead {
				m.Term = proto.Uint64(term + 1000)
			}
			err := sendForged(ctx, t.url, fg.creds, fg.urls, &peerspeak.Envelope{ClusterID: cluster, From: identityStranger, To: t.id, Message: m})
			switch {
			case fg.refused && err == nil:
				f.c.fail("forged identity: %016x took raft messages from %s", t.id, fg.what)
			case fg.refused:
				f.c.countStat("forged identity: refused (or unanswered) " + fg.what)
			case err == nil:
				f.c.countStat("forged identity: taken " + fg.what)
			}
		}
	}
	// A member answers a heartbeat at once: within an election timeout, any dial has come.
	sleep(ctx, 2*f.c.cfg.election)
	if n := sock.Count(); n > 0 {
		f.c.fail("forged identity: members dialed the unix socket a stranger named %d times", n)
	}
	return true
}

// forgeries are the streams the fault opens, on a plain or a TLS peer network.
func (f *injector) forgeries(sock string) ([]forgery, error) {
	p := f.c.pki
	if p == nil {
		return []forgery{{what: "a stranger at a unix socket", urls: []string{"unix://" + sock}}}, nil
	}
	creds := func(cert tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{cert}})
	}
	noHost, err := issueTLS(p.ca, "chaos-nohost", testpki.Hosts())
	if err != nil {
		return nil, err
	}
	loopback, err := issueTLS(p.ca, "chaos-stranger")
	if err != nil {
		return nil, err
	}
	unixs := "unixs://" + sock
	return []forgery{
		{what: "the test's client certificate", creds: creds(p.client), urls: []string{unixs}, ahead: true, refused: true},
		{what: "a peer certificate for no host, at a unix socket", creds: creds(noHost), urls: []string{unixs}, ahead: true, refused: true},
		{what: "a peer certificate for no host, at the members' host", creds: creds(noHost), urls: []string{"https://127.0.0.1:1"}, ahead: true, refused: true},
		{what: "a peer certificate for the members' host, at a unix socket beside it", creds: creds(loopback), urls: []string{unixs, "https://127.0.0.1:1"}},
	}, nil
}

// peerTarget is a running member, at its own peer port (behind no proxy).
type peerTarget struct {
	id  uint64
	url string
}

func (f *injector) peerTargets(sn snapshot) []peerTarget {
	scheme := "http"
	if f.c.pki != nil {
		scheme = "https"
	}
	var out []peerTarget
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	for id := range sn.clients {
		s := f.c.slots[sn.slotOf[id]]
		if s.id == id && s.proc != nil && !s.held {
			out = append(out, peerTarget{id: id, url: fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.peer)})
		}
	}
	return out
}

// sendForged sends env on one raft stream to url, naming urls as the sender's, and returns how the
// member ended it; each answered or refused within two seconds.
func sendForged(ctx context.Context, url string, creds credentials.TransportCredentials, urls []string, env *peerspeak.Envelope) error {
	conn, err := transport.Dial(url, creds)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return peerspeak.SendRaft(ctx, conn, urls, []*peerspeak.Envelope{env})
}

// issueTLS issues a peer certificate of ca for hosts (testpki's default hosts without opts).
func issueTLS(ca *testpki.CA, cn string, opts ...testpki.Option) (tls.Certificate, error) {
	p, err := ca.Peer(cn, opts...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return p.TLS()
}

// countingSocket listens on a unix socket in a directory of its own (short enough for a socket's
// path), and counts the connections it accepts.
func countingSocket() (*freeport.Counter, func(), error) {
	dir, err := os.MkdirTemp("", "chaos-sock")
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	c := freeport.Counting(l)
	return c, func() { c.Close(); os.RemoveAll(dir) }, nil
}
