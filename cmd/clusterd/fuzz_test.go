package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/clusterctl/clusterctl/pkg/server"
)

// FuzzParse: no ETCD_* environment and no config file panics clusterd's parse path, the flags'
// checks in server.New included, and every refusal is one line (the contract of a refused start).
// The fuzzer picks one variable by flag (or a raw name) and the config file's bytes.
func FuzzParse(f *testing.F) {
	f.Add("heartbeat-interval", "0", []byte("name: a\nelection-timeout: 1000\n"))
	f.Add("election-timeout", "1s", []byte(""))
	f.Add("initial-cluster", "a=http://127.0.0.1:1,a=http://127.0.0.1:1", []byte("name: a\n"))
	f.Add("name", " a ", []byte("initial-cluster: a=http://127.0.0.1:2380\n"))
	f.Add("strict-reconfig-check", "maybe", []byte("- a\n- b\n"))
	f.Add("NO_SUCH", "1", []byte("name: [\n"))
	f.Add("listen-client-urls", "https://127.0.0.1:1", []byte("cert-file: c\n"))
	f.Add("log-format", "xml", []byte("\x00\x01: [\n"))
	f.Add("discovery-endpoints", "http://127.0.0.1:1", []byte("discovery-token: t\n"))
	f.Add("config-file", "/nonexistent", []byte("name: a\n"))
	f.Add("tls-min-version", "TLS1.3", []byte("cipher-suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"))
	f.Add("max-learners", "-1", []byte("snapshot-count: 18446744073709551616\n"))
	f.Fuzz(func(t *testing.T, key, value string, config []byte) {
		name := "ETCD_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
		if strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
			return // not an environment variable a process can have
		}
		clearEtcdEnv(t)
		dir := t.TempDir()
		file := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(file, config, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(name, value)
		cfg, err := parse([]string{"--config-file", file, "--data-dir", filepath.Join(dir, "d")}, io.Discard)
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		if err == nil {
			_, err = server.New(cfg)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("%s=%q with config %q: a refusal of several lines: %q", name, value, config, err)
		}
	})
}

// clearEtcdEnv unsets every ETCD_* variable of the environment for this test, so that one
// input does not see another's.
func clearEtcdEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ETCD_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}
