package clienttls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Options are etcdctl's TLS flags.
type Options struct {
	CACert             string // --cacert: the CA bundle that verifies the server
	Cert               string // --cert: the client certificate
	Key                string // --key: its private key
	InsecureSkipVerify bool   // --insecure-skip-tls-verify
}

// ArgError is a TLS flag refused before anything is dialed.
type ArgError struct {
	Flag string // with its dashes: "--cert"
	Msg  string
}

func (e *ArgError) Error() string { return e.Flag + " " + e.Msg }

// Config checks and loads the files and returns the client's TLS configuration. The server
// name is left to grpc-go, which takes it from the endpoint.
func (o Options) Config() (*tls.Config, error) {
	switch {
	case o.Cert != "" && o.Key == "":
		return nil, &ArgError{"--cert", "needs --key"}
	case o.Key != "" && o.Cert == "":
		return nil, &ArgError{"--key", "needs --cert"}
	}
	// CurvePreferences is left to Go, as etcd's client leaves it: its default key exchange with
	// a TLS 1.3 server is the hybrid X25519MLKEM768, which keeps recorded traffic (passwords,
	// whole snapshots) safe from a later quantum computer. X25519 alone makes a handshake only
	// slightly cheaper (docs/benchmarks.md), not worth giving that up.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.InsecureSkipVerify}
	if o.CACert != "" {
		pool, err := loadPool(o.CACert)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if o.Cert != "" {
		cert, err := loadPair(o.Cert, o.Key)
		if err != nil {
			return nil, err
		}
		// Always present it (tls.Config.Certificates would be withheld from a server that
		// lists other CAs), so that the server's refusal names the real reason.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg, nil
}

func readFile(flag, path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ArgError{flag, fmt.Sprintf("%s: %v", path, err)}
	}
	return raw, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	raw, err := readFile("--cacert", path)
	if err != nil {
		return nil, err
	}
	pool, n := x509.NewCertPool(), 0
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, &ArgError{"--cacert", fmt.Sprintf("%s: %v", path, err)}
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, &ArgError{"--cacert", path + ": no PEM certificate in the file"}
	}
	return pool, nil
}

func loadPair(certPath, keyPath string) (*tls.Certificate, error) {
	certPEM, err := readFile("--cert", certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile("--key", keyPath)
	if err != nil {
		return nil, err
	}
	if !hasBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return nil, &ArgError{"--cert", certPath + ": no PEM certificate in the file"}
	}
	if !hasBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return nil, &ArgError{"--key", keyPath + ": no PEM private key in the file"}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, &ArgError{"--cert", fmt.Sprintf("%s and --key %s do not match: %v", certPath, keyPath, err)}
	}
	return &cert, nil
}

func hasBlock(raw []byte, want func(string) bool) bool {
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if want(block.Type) {
			return true
		}
	}
	return false
}
