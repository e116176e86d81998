package servertls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// makeSelfCert is etcd's auto TLS: a self-signed certificate for the listen URLs' hosts in
// <data-dir>/fixtures/<port>/{cert,key}.pem, reused when both files exist. It sets p's file
// names to them.
func makeSelfCert(p port, dataDir string, years uint, logger *slog.Logger) error {
	flag := p.flag("auto-tls")
	if dataDir == "" {
		return settingErr(flag, "needs --data-dir to keep its certificate in")
	}
	dir := filepath.Join(dataDir, "fixtures", p.name)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	p.CertFile, p.KeyFile = certFile, keyFile
	_, errCert := os.Stat(certFile)
	_, errKey := os.Stat(keyFile)
	if errCert == nil && errKey == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return settingErr(flag, "%v", err)
	}
	certPEM, keyPEM, err := selfSigned(hostsOf(p.ListenURLs), years, p.name == "peer")
	if err != nil {
		return settingErr(flag, "%v", err)
	}
	if err := errors.Join(os.WriteFile(keyFile, keyPEM, 0o600), os.WriteFile(certFile, certPEM, 0o644)); err != nil {
		return settingErr(flag, "%v", err)
	}
	logger.Warn("automatically generated a self-signed certificate", "flag", flag, "cert-file", certFile, "years", years)
	return nil
}

// selfSigned makes the certificate; a peer's also carries client auth because a member dials
// its peers with the same certificate it serves them.
func selfSigned(hosts []string, years uint, peer bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{Organization: []string{"etcd"}},
		NotBefore:             now,
		NotAfter:              now.Add(time.Duration(years) * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if peer {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
