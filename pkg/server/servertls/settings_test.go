package servertls

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateNamesTheFlag(t *testing.T) {
	https := []string{"https://127.0.0.1:2379"}
	peerHTTPS := []string{"https://127.0.0.1:2380"}
	plain := []string{"http://127.0.0.1:2379"}
	good := func() Settings {
		return Settings{
			Client: Side{CertFile: "c", KeyFile: "k", TrustedCAFile: "ca", ClientCertAuth: true, ListenURLs: https},
			Peer: Side{CertFile: "pc", KeyFile: "pk", TrustedCAFile: "pca", ClientCertAuth: true,
				AllowedCNs: []string{"m1"}, ListenURLs: peerHTTPS},
			SelfSignedCertValidity: 1,
		}
	}
	for _, c := range []struct {
		name   string
		change func(*Settings)
		prefix string // "" for valid
	}{
		{"kubeadm-like", func(*Settings) {}, ""},
		{"plain both", func(s *Settings) {
			*s = Settings{Client: Side{ListenURLs: plain}, Peer: Side{ListenURLs: []string{"http://127.0.0.1:2380"}}}
		}, ""},
		{"side by side", func(s *Settings) { s.Client.ListenURLs = append(plain, https...) }, ""},
		{"auto tls", func(s *Settings) {
			s.Client = Side{AutoTLS: true, ListenURLs: https}
			s.Peer = Side{AutoTLS: true, ListenURLs: peerHTTPS}
		}, ""},
		{"auto tls with client CA", func(s *Settings) { s.Client.CertFile, s.Client.KeyFile, s.Client.AutoTLS = "", "", true }, ""},
		{"TLS1.3 only", func(s *Settings) { s.TLSMinVersion = "TLS1.3" }, ""},
		{"suites", func(s *Settings) {
			s.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"}
		}, ""},

		{"cert without key", func(s *Settings) { s.Client.KeyFile = "" }, "--cert-file needs --key-file"},
		{"key without cert", func(s *Settings) { s.Peer.CertFile = "" }, "--peer-key-file needs --peer-cert-file"},
		{"client-cert-auth without CA", func(s *Settings) { s.Client.TrustedCAFile = "" }, "--client-cert-auth needs --trusted-ca-file"},
		{"peer-client-cert-auth without CA", func(s *Settings) { s.Peer.TrustedCAFile, s.Peer.AllowedCNs = "", nil }, "--peer-client-cert-auth needs --peer-trusted-ca-file"},
		{"allowed cn without CA", func(s *Settings) { s.Peer.TrustedCAFile, s.Peer.ClientCertAuth = "", false }, "--peer-cert-allowed-cn needs --peer-trusted-ca-file"},
		{"allowed host without CA", func(s *Settings) {
			s.Peer.TrustedCAFile, s.Peer.ClientCertAuth, s.Peer.AllowedCNs, s.Peer.AllowedHostnames = "", false, nil, []string{"m1"}
		}, "--peer-cert-allowed-hostname needs --peer-trusted-ca-file"},
		{"client-only without CA", func(s *Settings) {
			s.Peer.TrustedCAFile, s.Peer.ClientCertAuth, s.Peer.AllowedCNs, s.Peer.AllowClientOnly = "", false, nil, true
		}, "--peer-cert-allow-client-only needs --peer-trusted-ca-file"},
		{"client-only on the client port", func(s *Settings) { s.Client.AllowClientOnly = true }, "--peer-cert-allowed-cn applies to the peer port only"},
		{"cn and hostname", func(s *Settings) { s.Peer.AllowedHostnames = []string{"m1"} }, "--peer-cert-allowed-cn and --peer-cert-allowed-hostname are mutually exclusive"},
		{"https without cert", func(s *Settings) { s.Client = Side{ListenURLs: https} }, "--listen-client-urls https://127.0.0.1:2379 needs --cert-file and --key-file, or --auto-tls"},
		{"unixs without cert", func(s *Settings) { s.Peer = Side{ListenURLs: []string{"unixs://m1:2380"}} }, "--listen-peer-urls unixs://m1:2380 needs"},
		{"cert on plain port", func(s *Settings) { s.Client.ListenURLs = plain }, "--cert-file is set but --listen-client-urls has no https:// URL"},
		{"auto tls on plain port", func(s *Settings) { s.Client = Side{AutoTLS: true, ListenURLs: plain} }, "--auto-tls is set but"},
		{"peer auto tls with CA", func(s *Settings) {
			s.Peer = Side{AutoTLS: true, TrustedCAFile: "pca", ListenURLs: peerHTTPS}
		}, "--peer-auto-tls makes a self-signed certificate that --peer-trusted-ca-file cannot verify"},
		{"validity 0", func(s *Settings) { s.Client = Side{AutoTLS: true, ListenURLs: https}; s.SelfSignedCertValidity = 0 }, "--self-signed-cert-validity must be at least 1"},
		{"min over max", func(s *Settings) { s.TLSMinVersion, s.TLSMaxVersion = "TLS1.3", "TLS1.2" }, "--tls-min-version TLS1.3 is greater than --tls-max-version TLS1.2"},
		{"unknown min", func(s *Settings) { s.TLSMinVersion = "TLS1.1" }, `--tls-min-version unexpected TLS version "TLS1.1" (must be one of: TLS1.2, TLS1.3)`},
		{"unknown max", func(s *Settings) { s.TLSMaxVersion = "tls1.3" }, `--tls-max-version unexpected TLS version "tls1.3"`},
		{"unknown suite", func(s *Settings) { s.CipherSuites = []string{"TLS_NOPE"} }, `--cipher-suites unexpected TLS cipher suite "TLS_NOPE"`},
		{"insecure suites", func(s *Settings) {
			s.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_RC4_128_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"}
		}, "--cipher-suites refuses TLS_RSA_WITH_RC4_128_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: Go lists them as insecure"},
		{"no suite HTTP/2 accepts", func(s *Settings) { s.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"} },
			"--cipher-suites needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, which HTTP/2 requires"},
		{"suites with TLS1.3 only", func(s *Settings) {
			s.TLSMinVersion, s.CipherSuites = "TLS1.3", []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
		}, "--cipher-suites cannot be configured when only TLS1.3 is enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := good()
			c.change(&s)
			err := s.Validate()
			if c.prefix == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var se *SettingError
			if !errors.As(err, &se) {
				t.Fatalf("Validate: %v, want a *SettingError", err)
			}
			if !strings.HasPrefix(err.Error(), c.prefix) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate:\n got %q\nwant %q...", err, c.prefix)
			}
			if !strings.HasPrefix(err.Error(), se.Flag+" ") {
				t.Errorf("Flag %q is not the start of %q", se.Flag, err)
			}
		})
	}
}
