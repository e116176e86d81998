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

	"go.etcd.io/etcd/client/pkg/v3/transport"
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

// Config returns the client's TLS configuration, built as etcdctl builds it, by etcd's
// transport.TLSInfo. A file TLSInfo cannot use, and a CA file without a certificate (which
// TLSInfo takes as an empty pool), is explained by an *ArgError naming the flag. The server name
// is left to grpc-go, which takes it from the endpoint.
func (o Options) Config() (*tls.Config, error) {
	switch {
	case o.Cert != "" && o.Key == "":
		return nil, &ArgError{"--cert", "needs --key"}
	case o.Key != "" && o.Cert == "":
		return nil, &ArgError{"--key", "needs --cert"}
	}
	info := transport.TLSInfo{CertFile: o.Cert, KeyFile: o.Key, TrustedCAFile: o.CACert, InsecureSkipVerify: o.InsecureSkipVerify}
	cfg, err := info.ClientConfig()
	if err == nil && cfg.RootCAs != nil && cfg.RootCAs.Equal(x509.NewCertPool()) {
		err = errors.New("no CA certificate")
	}
	if err != nil {
		return nil, o.explain(err)
	}
	// TLSInfo sets no minimum without a certificate; Go's default is the same, but the config
	// says so either way.
	cfg.MinVersion = tls.VersionTLS12
	// CurvePreferences is left to Go, as in etcd's client: the hybrid X25519MLKEM768 keeps
	// recorded traffic (passwords, whole snapshots) safe from a later quantum computer.
	return cfg, nil
}

// explain finds which file TLSInfo could not use and says so in one line naming its flag.
func (o Options) explain(err error) error {
	if o.CACert != "" {
		if perr := checkPool(o.CACert); perr != nil {
			return perr
		}
	}
	if o.Cert != "" {
		if perr := checkPair(o.Cert, o.Key); perr != nil {
			return perr
		}
	}
	// The files changed since TLSInfo read them.
	if o.CACert != "" {
		return &ArgError{"--cacert", fmt.Sprintf("%s: %v", o.CACert, err)}
	}
	return &ArgError{"--cert", fmt.Sprintf("%s: %v", o.Cert, err)}
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

// checkPool reads the CA bundle as TLSInfo does: every PEM block a certificate.
func checkPool(path string) error {
	raw, err := readFile("--cacert", path)
	if err != nil {
		return err
	}
	if !hasBlock(raw, func(t string) bool { return t == "CERTIFICATE" }) {
		return &ArgError{"--cacert", path + ": no PEM certificate in the file"}
	}
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return &ArgError{"--cacert", fmt.Sprintf("%s: %v", path, err)}
		}
	}
	return nil
}

func checkPair(certPath, keyPath string) error {
	certPEM, err := readFile("--cert", certPath)
	if err != nil {
		return err
	}
	keyPEM, err := readFile("--key", keyPath)
	if err != nil {
		return err
	}
	if !hasBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return &ArgError{"--cert", certPath + ": no PEM certificate in the file"}
	}
	if !hasBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return &ArgError{"--key", keyPath + ": no PEM private key in the file"}
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return &ArgError{"--cert", fmt.Sprintf("%s and --key %s do not match: %v", certPath, keyPath, err)}
	}
	return nil
}

func hasBlock(raw []byte, want func(string) bool) bool {
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if want(block.Type) {
			return true
		}
	}
	return false
}
