package main

import (
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
		{[]string{"--config-file=/nonexistent/c.yaml"}, nil, `--config-file "/nonexistent/c.yaml"`},
		{[]string{"stray"}, nil, `unexpected argument "stray"`},
		{[]string{"--initial-cluster-state=old"}, nil, `--initial-cluster-state "old": must be new or existing`},
		{[]string{"--name=a", "--initial-cluster=a=notaurl"}, nil, `URL scheme must be http, https, unix, or unixs: notaurl`},
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
