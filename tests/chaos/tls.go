package chaos

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// transportCreds are what every client of the test (the recorder, the probes) dials the members
// with: plain, or with -tls the client certificate of the run's CA. Set once by TestChaos,
// before any member starts.
var transportCreds = insecure.NewCredentials()

// clusterPKI is a run's certificates with -tls: each slot has a server certificate (client
// port) and a peer certificate (peer port, both ways), and both ports demand a client
// certificate of the CA, as kubeadm sets etcd up.
type clusterPKI struct {
	ca           *testpki.CA
	server, peer []*testpki.Pair // by slot
	client       tls.Certificate // the test's
}

// newPKI makes the CA, every slot's certificates and the test's client credentials in dir.
func newPKI(dir string, slots int) (*clusterPKI, credentials.TransportCredentials, error) {
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return nil, nil, err
	}
	ca, err := testpki.NewCA(filepath.Join(dir, "pki"), "chaos-ca", testpki.ECDSAP256)
	if err != nil {
		return nil, nil, err
	}
	p := &clusterPKI{ca: ca}
	for i := range slots {
		s, err := ca.Server(fmt.Sprintf("slot%d", i))
		if err != nil {
			return nil, nil, err
		}
		pe, err := ca.Peer(fmt.Sprintf("slot%d-peer", i))
		if err != nil {
			return nil, nil, err
		}
		p.server, p.peer = append(p.server, s), append(p.peer, pe)
	}
	client, err := ca.Client("chaos-test")
	if err != nil {
		return nil, nil, err
	}
	if p.client, err = client.TLS(); err != nil {
		return nil, nil, err
	}
	return p, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{p.client}}), nil
}

// args are slot idx's TLS flags: certificates on both ports, client certificates demanded on both.
func (p *clusterPKI) args(idx int) []string {
	return []string{
		"--cert-file", p.server[idx].CertFile, "--key-file", p.server[idx].KeyFile,
		"--trusted-ca-file", p.ca.CertFile, "--client-cert-auth",
		"--peer-cert-file", p.peer[idx].CertFile, "--peer-key-file", p.peer[idx].KeyFile,
		"--peer-trusted-ca-file", p.ca.CertFile, "--peer-client-cert-auth",
	}
}

// rotateCerts issues a running member's server and peer certificates anew and writes them over
// its files, as cert-manager renews them in place; the member must serve the new server
// certificate to new connections within 10 s, without a restart, and keep answering.
func (f *injector) rotateCerts(ctx context.Context, sn snapshot) bool {
	p := f.c.pki
	if p == nil || len(sn.clients) == 0 {
		return false
	}
	addr := pick(f.rnd, sn.clients)
	idx := sn.slotOf[0]
	for id, a := range sn.clients {
		if a == addr {
			idx = sn.slotOf[id]
		}
	}
	srv, err := p.ca.Server(fmt.Sprintf("slot%d", idx))
	if err != nil {
		f.c.fail("rotate certificates: %v", err)
		return false
	}
	peer, err := p.ca.Peer(fmt.Sprintf("slot%d-peer", idx))
	if err != nil {
		f.c.fail("rotate certificates: %v", err)
		return false
	}
	// Written under the cluster's lock, which every start of a member takes: a member started
	// between a certificate and its key would find them mismatched and refuse to start, as it
	// must. A running member reads both anew at each handshake, and one that read them halfway
	// fails that handshake only, which its peer dials again.
	f.c.mu.Lock()
	err = srv.WriteTo(p.server[idx].CertFile, p.server[idx].KeyFile)
	if err == nil {
		err = peer.WriteTo(p.peer[idx].CertFile, p.peer[idx].KeyFile)
	}
	f.c.mu.Unlock()
	if err != nil {
		f.c.fail("rotate certificates: %v", err)
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if served(addr, p) == srv.Cert.SerialNumber.String() {
			f.c.countStat("rotate certificates: the new certificate served without a restart")
			return true
		}
		sleep(ctx, 200*time.Millisecond)
	}
	if ctx.Err() == nil && served(addr, p) != "" {
		f.c.fail("slot %d still serves its old certificate 10s after the files were rotated", idx)
	} else {
		f.c.countStat("rotate certificates: member not reachable to check (another fault)")
	}
	return true
}

// served is the serial number of the certificate the member at addr serves, or "".
func served(addr string, p *clusterPKI) string {
	d := &net.Dialer{Timeout: time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{p.client}, NextProtos: []string{"h2"}})
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}
