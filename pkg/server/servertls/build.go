package servertls

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// Configs are the tls.Configs of clusterd's two ports.
type Configs struct {
	// Client serves the https:// client URLs; nil when the client port has no TLS.
	Client *tls.Config
	// PeerServer serves the https:// peer URLs; nil when the peer port has no TLS.
	PeerServer *tls.Config
	// PeerClient dials other members' https:// peer URLs. Never nil: a member without peer
	// certificates can still dial a TLS peer that does not ask for one, as in etcd.
	PeerClient *tls.Config
}

// Build validates s, checks its files, makes the auto-TLS certificates and returns the configs:
// TLSInfo's, with this package's certificate reloading and allow-list check in place of its own.
func Build(s Settings) (*Configs, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	minV, maxV, suites, _ := s.versionsAndSuites()
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	out := &Configs{PeerClient: &tls.Config{MinVersion: minV, MaxVersion: maxV, CipherSuites: suites, NextProtos: []string{"h2"}}}
	// Every CA file is checked before anything is written, so that a bad one leaves no auto-TLS
	// certificate behind in the data directory.
	for _, p := range s.ports() {
		if p.enabled() && p.TrustedCAFile != "" {
			if err := checkPool(p.flag("trusted-ca-file"), p.TrustedCAFile); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range s.ports() {
		if !p.enabled() {
			continue
		}
		self := p.selfCert() // before makeSelfCert fills in the file names
		if p.AutoTLS && !self {
			logger.Warn("ignoring " + p.flag("auto-tls") + " since certificates are given")
		}
		if self {
			if err := makeSelfCert(p, s.DataDir, s.SelfSignedCertValidity, logger); err != nil {
				return nil, err
			}
		}
		pair, err := newKeyPair(p, logger)
		if err != nil {
			return nil, err
		}
		// etcd's meaning, from TLSInfo: a trusted CA requires client certificates even without
		// --client-cert-auth, and a member with a self-signed certificate trusts none, so it
		// does not verify its peers' either.
		info := transport.TLSInfo{
			CertFile: p.CertFile, KeyFile: p.KeyFile, TrustedCAFile: p.TrustedCAFile, ClientCertAuth: p.ClientCertAuth,
			InsecureSkipVerify: self, MinVersion: minV, MaxVersion: maxV, CipherSuites: suites,
		}
		srv, err := info.ServerConfig()
		if err != nil {
			return nil, settingErr(p.flag("cert-file"), "%v", err)
		}
		srv.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return pair.get() }
		srv.VerifyPeerCertificate = both(allowed(p), serverUse(p))
		if p.name == "client" {
			out.Client = srv
			continue
		}
		out.PeerServer = srv
		cli, err := info.ClientConfig()
		if err != nil {
			return nil, settingErr(p.flag("cert-file"), "%v", err)
		}
		cli.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return pair.get() }
		cli.VerifyPeerCertificate = allowed(p)
		cli.NextProtos = []string{"h2"}
		out.PeerClient = cli
	}
	return out, nil
}

// NotAllowedError refuses a verified certificate that --peer-cert-allowed-cn or
// --peer-cert-allowed-hostname does not allow, or (Flag ClientOnlyFlag) a client certificate on
// the peer port.
type NotAllowedError struct {
	Cert    *x509.Certificate
	Flag    string
	Allowed []string
}

func (e *NotAllowedError) Error() string {
	if e.Flag == ClientOnlyFlag {
		return fmt.Sprintf("certificate CN %q is for client use only (no serverAuth extended key usage), which the peer port refuses without %s", e.Cert.Subject.CommonName, ClientOnlyFlag)
	}
	if strings.HasSuffix(e.Flag, "-cn") {
		return fmt.Sprintf("certificate CN %q is not allowed by %s=%s", e.Cert.Subject.CommonName, e.Flag, strings.Join(e.Allowed, ","))
	}
	return fmt.Sprintf("certificate for %s matches no host name of %s=%s", names(e.Cert), e.Flag, strings.Join(e.Allowed, ","))
}

func names(c *x509.Certificate) string {
	n := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		n = append(n, ip.String())
	}
	if len(n) == 0 {
		return "no name"
	}
	return strings.Join(n, ",")
}

// allowed checks the leaf of the verified chain against the allow lists (nil when there is
// none), after crypto/tls's own verification; its error names the CN and the flag.
func allowed(p port) func([][]byte, [][]*x509.Certificate) error {
	cns, hosts := slices.Clone(p.AllowedCNs), slices.Clone(p.AllowedHostnames)
	if len(cns) == 0 && len(hosts) == 0 {
		return nil
	}
	return func(_ [][]byte, chains [][]*x509.Certificate) error {
		if len(chains) == 0 || len(chains[0]) == 0 {
			// Not reachable while Validate demands a CA; refuse rather than let it pass.
			return errors.New("tls: no verified certificate to check against the allowed names")
		}
		leaf := chains[0][0]
		if len(cns) > 0 {
			if slices.Contains(cns, leaf.Subject.CommonName) {
				return nil
			}
			return &NotAllowedError{Cert: leaf, Flag: p.flag("cert-allowed-cn"), Allowed: cns}
		}
		for _, h := range hosts {
			if leaf.VerifyHostname(h) == nil {
				return nil
			}
		}
		return &NotAllowedError{Cert: leaf, Flag: p.flag("cert-allowed-hostname"), Allowed: hosts}
	}
}

// ClientOnlyFlag is the setting that lets a client certificate (one whose extended key usage
// does not include serverAuth) connect to the peer port.
const ClientOnlyFlag = "--peer-cert-allow-client-only"

// serverUse refuses, on the peer port's serving side, a verified certificate that is for client
// use only, unless --peer-cert-allow-client-only: a member's peer certificate serves as well as
// dials (etcd's and kubeadm's are for server and client use), while a certificate for clusterctl
// or etcdctl, from a CA shared by both ports, is for client use alone and must not speak raft.
// A certificate without the extension is for any use, as crypto/x509 takes it.
func serverUse(p port) func([][]byte, [][]*x509.Certificate) error {
	if p.name != "peer" || p.AllowClientOnly {
		return nil
	}
	return func(_ [][]byte, chains [][]*x509.Certificate) error {
		if len(chains) == 0 || len(chains[0]) == 0 {
			return nil // nothing verified (no peer CA): nothing binds a certificate to a member
		}
		leaf := chains[0][0]
		if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 ||
			slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
			return nil
		}
		return &NotAllowedError{Cert: leaf, Flag: ClientOnlyFlag}
	}
}

// both runs a and then b, either of which may be nil.
func both(a, b func([][]byte, [][]*x509.Certificate) error) func([][]byte, [][]*x509.Certificate) error {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(raw [][]byte, chains [][]*x509.Certificate) error {
		if err := a(raw, chains); err != nil {
			return err
		}
		return b(raw, chains)
	}
}

// checkPool reads a CA file as TLSInfo will, naming the flag when it fails, and refuses a file
// without a certificate, which TLSInfo takes as an empty pool that verifies nothing.
func checkPool(flag, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return settingErr(flag, "%v", err)
	}
	n := 0
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return settingErr(flag, "%s: %v", file, err)
		}
		n++
	}
	if n == 0 {
		return settingErr(flag, "%s: no PEM certificate in the file", file)
	}
	return nil
}

// keyPair is a certificate and key file pair read on every handshake, as etcd reads it; a pair
// that fails to load leaves the last good one in service.
type keyPair struct {
	certFile, keyFile string
	certFlag          string
	logger            *slog.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	lastFail string // the failure last logged, so each distinct one is logged once
}

func newKeyPair(p port, logger *slog.Logger) (*keyPair, error) {
	k := &keyPair{certFile: p.CertFile, keyFile: p.KeyFile, certFlag: p.flag("cert-file"), logger: logger}
	if _, err := k.get(); err != nil {
		return nil, settingErr(k.certFlag, "%v", err)
	}
	return k, nil
}

func (k *keyPair) get() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(k.certFile)
	keyPEM, keyErr := os.ReadFile(k.keyFile)
	var c tls.Certificate
	if err = cmp.Or(err, keyErr); err == nil {
		// It parses the leaf, so a certificate that is not X.509 fails here and not in a
		// handshake.
		if c, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			err = fmt.Errorf("%s and %s: %w", k.certFile, k.keyFile, err)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		k.cert, k.lastFail = &c, ""
	case k.cert == nil:
		return nil, err
	case err.Error() != k.lastFail:
		k.lastFail = err.Error()
		k.logger.Warn("cannot reload certificate, still serving the previous one", "flag", k.certFlag, "error", err)
	}
	return k.cert, nil
}

// hostsOf is the host part of each URL, for the SANs of a self-signed certificate.
func hostsOf(urls []string) []string {
	var hosts []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		h := u.Hostname()
		if h == "" {
			h = u.Host
		}
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
