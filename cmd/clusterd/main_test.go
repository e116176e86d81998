package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Precedence is flag, then ETCD_* environment, then the config file.
func TestParsePrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("name: from-file\nheartbeat-interval: 50\nelection-timeout: 700\nmax-learners: 3\ninitial-cluster: a=http://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ETCD_ELECTION_TIMEOUT", "900")
	t.Setenv("ETCD_STRICT_RECONFIG_CHECK", "false")
	cfg, err := parse([]string{"--config-file", file, "--max-learners=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "from-file" || cfg.HeartbeatInterval != 50*time.Millisecond {
		t.Errorf("file values: %q %v", cfg.Name, cfg.HeartbeatInterval)
	}
	if cfg.ElectionTimeout != 900*time.Millisecond || cfg.StrictReconfigCheck {
		t.Errorf("environment over file: %v %v", cfg.ElectionTimeout, cfg.StrictReconfigCheck)
	}
	if cfg.MaxLearners != 2 {
		t.Errorf("flag over file: %d", cfg.MaxLearners)
	}
	if !cfg.InitialClusterGiven || cfg.DataDir != "from-file.clusterd" {
		t.Errorf("initial cluster given %v, data dir %q", cfg.InitialClusterGiven, cfg.DataDir)
	}
}

// ETCDCTL_* variables are etcdctl's: a shell set up for etcdctl starts clusterd unchanged.
func TestParseLeavesEtcdctlAlone(t *testing.T) {
	t.Setenv("ETCDCTL_ENDPOINTS", "https://127.0.0.1:2379")
	t.Setenv("ETCDCTL_CACERT", "ca.pem")
	if _, err := parse(nil, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// The TLS flags reach the settings with etcd's names, from flags and ETCD_* alike.
func TestParseTLS(t *testing.T) {
	t.Setenv("ETCD_PEER_CLIENT_CERT_AUTH", "true")
	t.Setenv("ETCD_PEER_CERT_ALLOWED_CN", "m1, m2")
	t.Setenv("ETCD_PEER_CERT_ALLOW_CLIENT_ONLY", "true")
	cfg, err := parse([]string{"--cert-file=c", "--key-file=k", "--trusted-ca-file=ca", "--client-cert-auth",
		"--peer-cert-file=pc", "--cipher-suites=A,B", "--admin-cert-allowed-cn=admin"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, p := cfg.TLS.Client, cfg.TLS.Peer
	if c.CertFile != "c" || c.KeyFile != "k" || c.TrustedCAFile != "ca" || !c.ClientCertAuth || p.CertFile != "pc" ||
		!p.ClientCertAuth || strings.Join(p.AllowedCNs, "|") != "m1|m2" || !p.AllowClientOnly || len(cfg.TLS.CipherSuites) != 2 ||
		cfg.TLS.SelfSignedCertValidity != 1 || strings.Join(cfg.AdminAllowedCNs, "|") != "admin" {
		t.Errorf("settings: %+v admin %v", cfg.TLS, cfg.AdminAllowedCNs)
	}
}

// A config file key that names no setting is refused, as an ETCD_* variable is.
func TestParseRefusesUnknownFileKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("client-crl-file: crl.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse([]string{"--config-file", file}, io.Discard); err == nil || !strings.Contains(err.Error(), `"client-crl-file" is not a setting clusterd implements`) {
		t.Errorf("got %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HeartbeatInterval != 100*time.Millisecond || cfg.ElectionTimeout != time.Second || !cfg.StrictReconfigCheck ||
		cfg.MaxLearners != 1 || cfg.SnapshotCount != 10000 || cfg.InitialClusterGiven || cfg.InitialClusterState != "new" {
		t.Errorf("defaults as etcd's: %+v", cfg)
	}
}

// Every bad value is one line naming the flag and the value, exit 1, nothing started.
func TestRunRefusesBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--heartbeat-interval=100ms"}, nil, `"--heartbeat-interval" flag`},
		{nil, map[string]string{"ETCD_ELECTION_TIMEOUT": "1s"}, `--election-timeout "1s": must be a whole number, without a unit`},
		{nil, map[string]string{"ETCD_STRICT_RECONFIG_CHECK": "maybe"}, `--strict-reconfig-check "maybe": must be true or false`},
		{[]string{"--log-level=loud"}, nil, `--log-level "loud"`},
		{[]string{"--config-file=/nonexistent/c.yaml"}, nil, `--config-file "/nonexistent/c.yaml": the file does not exist`},
		{[]string{"--config-file=/nonexistent"}, nil, `--config-file "/nonexistent": the file does not exist`},
		{[]string{"--heartbeat-interval=0"}, nil, `--heartbeat-interval 0: must be at least 1 (milliseconds)`},
		{nil, map[string]string{"ETCD_HEARTBEAT_INTERVAL": "0", "ETCD_ELECTION_TIMEOUT": "0"}, `--heartbeat-interval 0: must be at least 1`},
		{[]string{"--heartbeat-interval=100", "--election-timeout=400"}, nil, `--election-timeout 400ms must be at least 5 times --heartbeat-interval 100ms`},
		{[]string{"stray"}, nil, `unexpected argument "stray"`},
		{[]string{"--initial-cluster-state=old"}, nil, `--initial-cluster-state "old": must be new or existing`},
		{[]string{"--name=a", "--initial-cluster=a=notaurl"}, nil, `URL scheme must be http, https, unix, or unixs: notaurl`},
		// etcd settings clusterd does not implement, above all security ones, are refused by name.
		{nil, map[string]string{"ETCD_DISCOVERY": "https://discovery.etcd.io/x"}, `ETCD_DISCOVERY is set, and clusterd does not implement etcd's --discovery`},
		{nil, map[string]string{"ETCD_DISCOVERY_SRV": "example.com"}, `ETCD_DISCOVERY_SRV is set`},
		{nil, map[string]string{"ETCD_CLIENT_CRL_FILE": "crl.pem"}, `ETCD_CLIENT_CRL_FILE is set`},
		{nil, map[string]string{"ETCD_PEER_CRL_FILE": "crl.pem"}, `ETCD_PEER_CRL_FILE is set`},
		{nil, map[string]string{"ETCD_AUTH_TOKEN": "jwt"}, `ETCD_AUTH_TOKEN is set`},
		{nil, map[string]string{"ETCD_NO_SUCH_THING": "1"}, `ETCD_NO_SUCH_THING is set`},
		// Bad TLS combinations: one line naming the flag, nothing written.
		{[]string{"--listen-client-urls=https://127.0.0.1:12379"}, nil, `--listen-client-urls https://127.0.0.1:12379 needs --cert-file and --key-file, or --auto-tls`},
		{[]string{"--listen-peer-urls=https://127.0.0.1:12379"}, nil, `--listen-peer-urls https://127.0.0.1:12379 needs --peer-cert-file and --peer-key-file, or --peer-auto-tls`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--cert-file=c.pem"}, nil, `--cert-file needs --key-file`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--key-file=k.pem"}, nil, `--key-file needs --cert-file`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--auto-tls", "--client-cert-auth"}, nil, `--client-cert-auth needs --trusted-ca-file`},
		{[]string{"--listen-peer-urls=https://127.0.0.1:12379", "--peer-auto-tls", "--peer-client-cert-auth"}, nil, `--peer-client-cert-auth needs --peer-trusted-ca-file`},
		{[]string{"--cert-file=c.pem", "--key-file=k.pem"}, nil, `--cert-file is set but --listen-client-urls has no https:// URL`},
		{nil, map[string]string{"ETCD_CLIENT_CERT_AUTH": "true", "ETCD_TRUSTED_CA_FILE": "ca.pem"}, `--trusted-ca-file is set but --listen-client-urls has no https:// URL`},
		{[]string{"--peer-cert-allowed-cn=m1", "--peer-trusted-ca-file=ca.pem"}, nil, `--peer-trusted-ca-file is set but --listen-peer-urls has no https:// URL`},
		{[]string{"--peer-cert-allowed-cn=m1"}, nil, `--peer-cert-allowed-cn needs --peer-trusted-ca-file`},
		{[]string{"--listen-peer-urls=https://127.0.0.1:12379", "--peer-auto-tls", "--peer-cert-allowed-cn=a", "--peer-cert-allowed-hostname=h"}, nil, `mutually exclusive`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--auto-tls", "--self-signed-cert-validity=0"}, nil, `--self-signed-cert-validity must be at least 1`},
		{[]string{"--tls-min-version=TLS1.1"}, nil, `--tls-min-version unexpected TLS version "TLS1.1"`},
		{[]string{"--tls-min-version=TLS1.3", "--tls-max-version=TLS1.2"}, nil, `--tls-min-version TLS1.3 is greater than --tls-max-version TLS1.2`},
		{[]string{"--cipher-suites=TLS_NOPE"}, nil, `--cipher-suites unexpected TLS cipher suite "TLS_NOPE"`},
		{[]string{"--tls-min-version=TLS1.3", "--cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, nil, `cannot be configured when only TLS1.3 is enabled`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--auto-tls", "--admin-cert-allowed-cn=root"}, nil, `--admin-cert-allowed-cn needs --client-cert-auth`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--cert-file=/nonexistent/c.pem", "--key-file=/nonexistent/k.pem"}, nil, `--cert-file open /nonexistent/c.pem: no such file or directory`},
		{[]string{"--listen-client-urls=https://127.0.0.1:12379", "--auto-tls", "--trusted-ca-file=/nonexistent/ca.pem"}, nil, `--trusted-ca-file open /nonexistent/ca.pem`},
		{[]string{"--listen-peer-urls=https://127.0.0.1:12379", "--peer-auto-tls", "--listen-client-urls=https://127.0.0.1:12379", "--auto-tls", "--trusted-ca-file=/nonexistent/ca.pem"}, nil, `--trusted-ca-file open /nonexistent/ca.pem`},
	} {
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		var stderr strings.Builder
		dir := filepath.Join(t.TempDir(), "d")
		code := run(append([]string{"--data-dir", dir}, tt.args...), &stderr)
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if code != exitFailed || len(lines) != 1 || !strings.HasPrefix(lines[0], "clusterd: ") || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v %v: exit %d, stderr %q, want one line with %q", tt.args, tt.env, code, stderr.String(), tt.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: the data dir was written", tt.args)
		}
		for k := range tt.env {
			os.Unsetenv(k)
		}
	}
}

// A config file that is not YAML of settings is refused in one line that says so.
func TestRunRefusesConfigFileNotYAML(t *testing.T) {
	for name, text := range map[string]string{
		"tab":    "name: a\n\tdata-dir: x\n",
		"list":   "- a\n- b\n",
		"binary": "\x00\x01\x02: [\n",
	} {
		file := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		code := run([]string{"--data-dir", filepath.Join(t.TempDir(), "d"), "--config-file", file}, &stderr)
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if code != exitFailed || len(lines) != 1 || !strings.Contains(lines[0], "not a YAML file of settings") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr.String())
		}
	}
}

// TestUnknownVariablesAllNamed: every ETCD_* variable clusterd does not take is named in the one
// line, and one a slip away from a setting's variable names the variable meant.
func TestUnknownVariablesAllNamed(t *testing.T) {
	fs := defineFlags(io.Discard)
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"ETCD_CERT_FIEL=c.pem"}, "ETCD_CERT_FIEL is set, and clusterd has no --cert-fiel: did you mean ETCD_CERT_FILE?: unset it (docs/clusterd.md lists the settings clusterd takes)"},
		{[]string{"ETCD_DISCOVERY=x", "ETCD_PEER_CRL_FILE=crl.pem", "ETCD_NAME=a"}, "2 variables are set that clusterd does not take: ETCD_DISCOVERY (clusterd does not implement etcd's --discovery), ETCD_PEER_CRL_FILE (clusterd does not implement etcd's --peer-crl-file): unset them (docs/clusterd.md lists the settings clusterd takes)"},
		{[]string{"ETCD_NAME=a", "ETCD_DATA_DIR=d"}, ""},
	} {
		err := checkEnvironment(fs, tt.env)
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("checkEnvironment(%v) = %v\nwant %s", tt.env, err, tt.want)
		}
	}
}
