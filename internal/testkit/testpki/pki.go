package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Algorithm is the key type of a CA and of every certificate it issues.
type Algorithm int

const (
	// ECDSAP256 is fast to generate: the default for tests.
	ECDSAP256 Algorithm = iota
	// RSA2048 is what kubeadm makes.
	RSA2048
)

func (a Algorithm) String() string {
	if a == RSA2048 {
		return "rsa2048"
	}
	return "ecdsa-p256"
}

// Usage is what a leaf certificate is for, as its extended key usage says.
type Usage int

const (
	// Server certificates carry ServerAuth and, unless Hosts says otherwise, the SANs
	// 127.0.0.1 and localhost.
	Server Usage = iota
	// Client certificates carry ClientAuth and no SAN.
	Client
	// Peer certificates carry both ServerAuth and ClientAuth, as etcd's peer certificates do:
	// a member both serves and dials its peers with the same one.
	Peer
)

func (u Usage) String() string {
	switch u {
	case Client:
		return "client"
	case Peer:
		return "peer"
	}
	return "server"
}

// DefaultHosts are the SANs of a server or peer certificate when no Hosts option is given.
var DefaultHosts = []string{"127.0.0.1", "localhost"}

// CA is a certificate authority whose certificate and key live in Dir.
type CA struct {
	Name     string
	Dir      string
	CertFile string
	KeyFile  string
	Cert     *x509.Certificate
	CertPEM  []byte

	alg Algorithm
	key crypto.Signer

	mu    sync.Mutex
	names map[string]int // file base name -> times used, so no file is overwritten
}

// Pair is a leaf certificate and its key, on disk and parsed.
type Pair struct {
	CertFile string
	KeyFile  string
	Cert     *x509.Certificate
	CertPEM  []byte
	KeyPEM   []byte
}

// NewCA makes a self-signed CA named name, writing <dir>/<name>.pem and <dir>/<name>-key.pem.
func NewCA(dir, name string, alg Algorithm) (*CA, error) {
	key, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"clusterctl tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Name: name, Dir: dir, Cert: cert, alg: alg, key: key, names: map[string]int{}}
	pair, err := writePair(dir, name, der, key)
	if err != nil {
		return nil, err
	}
	ca.CertFile, ca.KeyFile, ca.CertPEM = pair.CertFile, pair.KeyFile, pair.CertPEM
	return ca, nil
}

// Algorithm is the key type of the CA and its leaves.
func (ca *CA) Algorithm() Algorithm { return ca.alg }

// Pool is a pool holding only this CA, for verifying what it issued.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Option changes a leaf certificate before it is signed.
type Option func(*x509.Certificate)

// Hosts replaces the SANs: each host is an IP SAN if it parses as an IP, else a DNS SAN.
func Hosts(hosts ...string) Option {
	return func(c *x509.Certificate) { c.IPAddresses, c.DNSNames = splitHosts(hosts) }
}

// WrongHost gives the certificate SANs that no test dials (a TEST-NET-1 address and a name under
// the reserved .invalid TLD), so verifying it for 127.0.0.1 or localhost fails on the name only.
func WrongHost() Option { return Hosts("192.0.2.1", "wrong.invalid") }

// Expired makes a certificate that stopped being valid an hour ago.
func Expired() Option {
	return Validity(time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
}

// NotYetValid makes a certificate that becomes valid only tomorrow.
func NotYetValid() Option {
	return Validity(time.Now().Add(24*time.Hour), time.Now().Add(48*time.Hour))
}

// Validity sets the validity period.
func Validity(notBefore, notAfter time.Time) Option {
	return func(c *x509.Certificate) { c.NotBefore, c.NotAfter = notBefore, notAfter }
}

// Issue signs a new leaf certificate with Subject CN cn for usage and writes it beside the CA.
func (ca *CA) Issue(usage Usage, cn string, opts ...Option) (*Pair, error) {
	key, err := newKey(ca.alg)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"clusterctl tests"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if ca.alg == RSA2048 {
		// RSA key exchange in TLS 1.2 needs it; kubeadm's certificates carry it too.
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	switch usage {
	case Server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case Peer:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return nil, fmt.Errorf("pki: unknown usage %d", usage)
	}
	if usage != Client {
		tmpl.IPAddresses, tmpl.DNSNames = splitHosts(DefaultHosts)
	}
	for _, o := range opts {
		o(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: issue %s %s: %w", usage, cn, err)
	}
	return writePair(ca.Dir, ca.fileBase(usage, cn), der, key)
}

// Server issues a server certificate for 127.0.0.1 and localhost (or opts' hosts).
func (ca *CA) Server(cn string, opts ...Option) (*Pair, error) { return ca.Issue(Server, cn, opts...) }

// Client issues a client certificate with CN cn.
func (ca *CA) Client(cn string, opts ...Option) (*Pair, error) { return ca.Issue(Client, cn, opts...) }

// Peer issues a peer certificate (server and client auth) for 127.0.0.1 and localhost.
func (ca *CA) Peer(cn string, opts ...Option) (*Pair, error) { return ca.Issue(Peer, cn, opts...) }

// TLS is the pair as crypto/tls uses it.
func (p *Pair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(p.CertPEM, p.KeyPEM) }

// ClientConfig is a client's TLS config that trusts ca and presents p (nothing when p is nil).
func (ca *CA) ClientConfig(p *Pair) (*tls.Config, error) {
	cfg := &tls.Config{RootCAs: ca.Pool()}
	if p != nil {
		cert, err := p.TLS()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// WriteTo writes this pair over certFile and keyFile, each by a rename so that a reader never
// sees half a file, as cert-manager and kubeadm renew certificates in place. The two renames are
// not one atomic step: a reader between them sees a new certificate with the old key.
func (p *Pair) WriteTo(certFile, keyFile string) error {
	if err := writeAtomic(certFile, p.CertPEM, 0o644); err != nil {
		return err
	}
	return writeAtomic(keyFile, p.KeyPEM, 0o600)
}

func (ca *CA) fileBase(usage Usage, cn string) string {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, cn)
	base := fmt.Sprintf("%s-%s-%s", ca.Name, usage, safe)
	n := ca.names[base]
	ca.names[base] = n + 1
	if n > 0 {
		base = fmt.Sprintf("%s-%d", base, n+1)
	}
	return base
}

func newKey(alg Algorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("pki: unknown algorithm %d", alg)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func splitHosts(hosts []string) (ips []net.IP, dns []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return ips, dns
}

func writePair(dir, base string, der []byte, key crypto.Signer) (*Pair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &Pair{
		CertFile: filepath.Join(dir, base+".pem"),
		KeyFile:  filepath.Join(dir, base+"-key.pem"),
		Cert:     cert,
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	if err := os.WriteFile(p.CertFile, p.CertPEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.KeyFile, p.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
