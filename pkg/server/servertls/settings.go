package servertls

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/tlsutil"
)

// Side is the TLS settings of one port. Flag names in the comments are the client port's; the
// peer port's have the peer- prefix (--peer-cert-file, --peer-client-cert-auth, ...).
type Side struct {
	CertFile       string // --cert-file
	KeyFile        string // --key-file
	TrustedCAFile  string // --trusted-ca-file
	ClientCertAuth bool   // --client-cert-auth
	AutoTLS        bool   // --auto-tls
	// AllowedCNs and AllowedHostnames exist on the peer port only:
	// --peer-cert-allowed-cn and --peer-cert-allowed-hostname.
	AllowedCNs       []string
	AllowedHostnames []string
	// AllowClientOnly exists on the peer port only: --peer-cert-allow-client-only lets a
	// certificate without the serverAuth extended key usage connect to it.
	AllowClientOnly bool
	// ListenURLs are --listen-client-urls (--listen-peer-urls): TLS is served on the https://
	// and unixs:// ones.
	ListenURLs []string
}

// Settings is every TLS setting of clusterd.
type Settings struct {
	Client Side
	Peer   Side
	// SelfSignedCertValidity is --self-signed-cert-validity, in years as in etcd.
	SelfSignedCertValidity uint
	TLSMinVersion          string   // --tls-min-version: "", TLS1.2 or TLS1.3
	TLSMaxVersion          string   // --tls-max-version
	CipherSuites           []string // --cipher-suites, Go's names (TLS_ECDHE_..._SHA256)
	// DataDir is --data-dir: auto TLS keeps its certificates under <data-dir>/fixtures.
	DataDir string
	// Logger gets the start-up warnings and the certificate reload failures; nil discards them.
	Logger *slog.Logger
}

// SettingError is an inconsistent or unusable setting: Error is one line that starts with the
// flag to change.
type SettingError struct {
	Flag string // with its dashes: "--peer-cert-file"
	Msg  string
}

func (e *SettingError) Error() string { return e.Flag + " " + e.Msg }

func settingErr(flag, format string, args ...any) error {
	return &SettingError{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}

// port names the flags of one side.
type port struct {
	name   string // "client" or "peer"
	prefix string // "" or "peer-"
	*Side
}

func (p port) flag(name string) string { return "--" + p.prefix + name }

func (p port) listenFlag() string { return "--listen-" + p.name + "-urls" }

// selfCert is whether Build makes this side a self-signed certificate.
func (p port) selfCert() bool { return p.AutoTLS && p.CertFile == "" && p.KeyFile == "" }

func (p port) enabled() bool { return p.CertFile != "" || p.AutoTLS }

func (s *Settings) ports() [2]port {
	return [2]port{{"client", "", &s.Client}, {"peer", "peer-", &s.Peer}}
}

// Validate reports the first setting that is inconsistent with the others, without touching
// the disk. A nil error means Build can be called.
func (s *Settings) Validate() error {
	for _, p := range s.ports() {
		if err := p.validate(); err != nil {
			return err
		}
	}
	if len(s.Client.AllowedCNs) > 0 || len(s.Client.AllowedHostnames) > 0 || s.Client.AllowClientOnly {
		// No flag sets these: only the wiring could, by mistake.
		return settingErr("--peer-cert-allowed-cn", "applies to the peer port only, not to the client port")
	}
	ports := s.ports()
	if (ports[0].selfCert() || ports[1].selfCert()) && s.SelfSignedCertValidity == 0 {
		return settingErr("--self-signed-cert-validity", "must be at least 1 (years) with --auto-tls or --peer-auto-tls")
	}
	_, _, _, err := s.versionsAndSuites()
	return err
}

func (p port) validate() error {
	switch {
	case p.CertFile != "" && p.KeyFile == "":
		return settingErr(p.flag("cert-file"), "needs %s", p.flag("key-file"))
	case p.KeyFile != "" && p.CertFile == "":
		return settingErr(p.flag("key-file"), "needs %s", p.flag("cert-file"))
	case p.ClientCertAuth && p.TrustedCAFile == "":
		return settingErr(p.flag("client-cert-auth"), "needs %s: without a CA no client certificate can be verified", p.flag("trusted-ca-file"))
	case len(p.AllowedCNs) > 0 && len(p.AllowedHostnames) > 0:
		return settingErr(p.flag("cert-allowed-cn"), "and %s are mutually exclusive, as in etcd", p.flag("cert-allowed-hostname"))
	case len(p.AllowedCNs) > 0 && p.TrustedCAFile == "":
		return settingErr(p.flag("cert-allowed-cn"), "needs %s: a CN is checked only on a certificate that CA verified", p.flag("trusted-ca-file"))
	case len(p.AllowedHostnames) > 0 && p.TrustedCAFile == "":
		return settingErr(p.flag("cert-allowed-hostname"), "needs %s: a host name is checked only on a certificate that CA verified", p.flag("trusted-ca-file"))
	case p.AllowClientOnly && p.TrustedCAFile == "":
		return settingErr(ClientOnlyFlag, "needs %s: without a CA no peer certificate is verified, nor refused", p.flag("trusted-ca-file"))
	case p.prefix != "" && p.selfCert() && p.TrustedCAFile != "":
		return settingErr(p.flag("auto-tls"), "makes a self-signed certificate that %s cannot verify: give %s and %s instead", p.flag("trusted-ca-file"), p.flag("cert-file"), p.flag("key-file"))
	}
	switch i := slices.IndexFunc(p.ListenURLs, secure); {
	case i >= 0 && !p.enabled():
		return settingErr(p.listenFlag(), "%s needs %s and %s, or %s", p.ListenURLs[i], p.flag("cert-file"), p.flag("key-file"), p.flag("auto-tls"))
	case i < 0 && len(p.ListenURLs) > 0 && p.firstTLSFlag() != "":
		return settingErr(p.firstTLSFlag(), "is set but %s has no https:// URL: it would be ignored", p.listenFlag())
	}
	return nil
}

// firstTLSFlag names a TLS setting that is set, for the message that it would do nothing.
func (p port) firstTLSFlag() string {
	switch {
	case p.CertFile != "":
		return p.flag("cert-file")
	case p.TrustedCAFile != "":
		return p.flag("trusted-ca-file")
	case p.ClientCertAuth:
		return p.flag("client-cert-auth")
	case p.AutoTLS:
		return p.flag("auto-tls")
	case len(p.AllowedCNs) > 0:
		return p.flag("cert-allowed-cn")
	case len(p.AllowedHostnames) > 0:
		return p.flag("cert-allowed-hostname")
	case p.AllowClientOnly:
		return ClientOnlyFlag
	}
	return ""
}

func secure(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "unixs")
}

// versionsAndSuites parses --tls-min-version, --tls-max-version and --cipher-suites with etcd's
// rules: TLS 1.2 is the default minimum, and cipher suites cannot be chosen for TLS 1.3 alone
// (Go does not let them be).
func (s *Settings) versionsAndSuites() (minV, maxV uint16, suites []uint16, err error) {
	if minV, err = parseVersion("--tls-min-version", s.TLSMinVersion); err != nil {
		return 0, 0, nil, err
	}
	if maxV, err = parseVersion("--tls-max-version", s.TLSMaxVersion); err != nil {
		return 0, 0, nil, err
	}
	if maxV != 0 && minV > maxV {
		return 0, 0, nil, settingErr("--tls-min-version", "%s is greater than --tls-max-version %s", s.TLSMinVersion, s.TLSMaxVersion)
	}
	var insecure []string
	for _, name := range s.CipherSuites {
		// etcd's names: Go's, insecure ones included (so that they can be named as refused
		// rather than unknown), and the two ChaCha20 names Go had before 1.16.
		id, ok := tlsutil.GetCipherSuite(strings.TrimSpace(name))
		if !ok {
			return 0, 0, nil, settingErr("--cipher-suites", "unexpected TLS cipher suite %q", name)
		}
		if slices.ContainsFunc(tls.InsecureCipherSuites(), func(c *tls.CipherSuite) bool { return c.ID == id }) {
			insecure = append(insecure, tls.CipherSuiteName(id))
		}
		suites = append(suites, id)
	}
	if len(insecure) > 0 {
		return 0, 0, nil, settingErr("--cipher-suites", "refuses %s: Go lists them as insecure", strings.Join(insecure, ", "))
	}
	if minV == tls.VersionTLS13 && len(suites) > 0 {
		return 0, 0, nil, settingErr("--cipher-suites", "cannot be configured when only TLS1.3 is enabled")
	}
	if len(suites) > 0 && !slices.Contains(suites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) && !slices.Contains(suites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) {
		// etcd refuses such a list too: its HTTP/2 server does (RFC 7540, 9.2.2), and gRPC
		// speaks HTTP/2.
		return 0, 0, nil, settingErr("--cipher-suites", "needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, which HTTP/2 requires")
	}
	if minV == 0 {
		minV = tls.VersionTLS12
	}
	return minV, maxV, suites, nil
}

func parseVersion(flag, name string) (uint16, error) {
	v, err := tlsutil.GetTLSVersion(name)
	if err != nil {
		return 0, settingErr(flag, "%v", err)
	}
	return v, nil
}
