package command

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestMain(m *testing.M) {
	silenceGRPC()
	os.Exit(m.Run())
}

// listener counts the connections made to it, to prove that nothing was sent.
func listener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), &n
}

func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func runArgs(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestBadCommandLinesSendNothing(t *testing.T) {
	addr, conns := listener(t)
	ep := "--endpoints=" + addr
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{ep, "member", "add"}, "Error: member name not provided\n"},
		{[]string{ep, "member", "add", "infra5"}, "Error: member peer urls not provided\n"},
		{[]string{ep, "member", "add", "infra6", "--peer-urls=notaurl"}, "Error: URL scheme must be http, https, unix, or unixs: notaurl\n"},
		{[]string{ep, "member", "add", "infra3", "--peer-urls=http://a:1", "-w", "table"}, "Error: output format \"table\" is not supported by member add (supported: simple, json, env)\n"},
		{[]string{ep, "member", "remove"}, "Error: member ID is not provided\n"},
		{[]string{ep, "member", "update", "infra0"}, "Error: member peer urls not provided\n"},
		{[]string{ep, "member", "promote"}, "Error: member ID is not provided\n"},
		{[]string{ep, "member", "add", "infra3", "--peer-urls=http://a:1", "--dry-run", "-w", "env"}, "Error: output format \"env\" is not supported by member add --dry-run (supported: simple, json)\n"},
		{[]string{ep, "member", "promote", "infra3", "--dry-run", "--wait"}, "Error: --dry-run and --wait cannot be used together\n"},
		{[]string{ep, "member", "list", "-w", "env"}, "Error: output format \"env\" is not supported by member list (supported: simple, table, json)\n"},
		{[]string{ep, "member", "list", "-w", "yaml"}, "Error: unknown output format \"yaml\" (supported: simple, table, json, env)\n"},
		{[]string{ep, "member", "list", "--consistency=x"}, "Error: unknown consistency flag \"x\"\n"},
		{[]string{ep, "member", "list", "--bogus"}, "Error: unknown flag: --bogus\n"},
		{[]string{ep, "member", "promote", "x", "--wait=soon"}, "Error: invalid argument \"soon\" for \"--wait\" flag: time: invalid duration \"soon\"\n"},
		{[]string{ep, "member", "bogus"}, "Error: unknown command \"bogus\" for \"clusterctl member\"\n"},
		{[]string{ep, "bogus"}, "Error: unknown command \"bogus\" for \"clusterctl\"\n"},
		{[]string{"--endpoints=https://" + addr, "member", "list"}, "Error: endpoint \"https://" + addr + "\": only host:port or http://host:port is supported\n"},
		{[]string{ep, "--dial-timeout=0s", "member", "list"}, "Error: --dial-timeout must be positive, not 0s\n"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runArgs(tt.args...)
		if code != 128 || stdout != "" || stderr != tt.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 128, nothing, %q", tt.args, code, stdout, stderr, tt.stderr)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections made", n)
	}
}

func TestCannotConnectNamesEndpoints(t *testing.T) {
	a, b := deadAddr(t), deadAddr(t)
	stdout, stderr, code := runArgs("--endpoints="+a+","+b, "member", "list")
	want := "Error: no endpoint answered: " + a + " (connect: connection refused), " + b + " (connect: connection refused)\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, %q", code, stdout, stderr, want)
	}
}

// TestSettingsPrecedence checks flag over CLUSTERCTL_* over the config file, through the
// endpoint the error names.
func TestSettingsPrecedence(t *testing.T) {
	fromFile, fromEnv, fromFlag := deadAddr(t), deadAddr(t), deadAddr(t)
	config := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(config, []byte("endpoints: ["+fromFile+"]\nwrite-out: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := func(args ...string) string {
		t.Helper()
		_, stderr, code := runArgs(append([]string{"--config-file=" + config}, args...)...)
		if code != 2 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		return stderr
	}
	if got := endpoint("member", "list"); !strings.Contains(got, fromFile) {
		t.Errorf("file: %s", got)
	}
	t.Setenv("CLUSTERCTL_ENDPOINTS", fromEnv+","+fromEnv)
	if got := endpoint("member", "list"); !strings.Contains(got, fromEnv+" (connect: connection refused), "+fromEnv) {
		t.Errorf("environment: %s", got)
	}
	if got := endpoint("--endpoints="+fromFlag, "member", "list"); !strings.Contains(got, fromFlag) || strings.Contains(got, fromEnv) {
		t.Errorf("flag: %s", got)
	}
	// The file's write-out applies: env is refused for member list as json would not be.
	t.Setenv("CLUSTERCTL_WRITE_OUT", "env")
	if _, stderr, code := runArgs("--config-file="+config, "member", "list"); code != 128 || !strings.Contains(stderr, `"env"`) {
		t.Errorf("write-out from environment: exit %d, %s", code, stderr)
	}
	t.Setenv("CLUSTERCTL_DIAL_TIMEOUT", "5")
	if _, stderr, code := runArgs("member", "list"); code != 128 || stderr != "Error: --dial-timeout: time: missing unit in duration \"5\"\n" {
		t.Errorf("bare number: exit %d, %q", code, stderr)
	}
}

func TestMissingConfigFile(t *testing.T) {
	_, stderr, code := runArgs("--config-file=/nonexistent/clusterctl.yaml", "member", "list")
	if code != 128 || !strings.HasPrefix(stderr, "Error: config file /nonexistent/clusterctl.yaml: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRootCmd(&Globals{})
	for _, group := range root.Commands() {
		for _, c := range append(group.Commands(), group) {
			if !strings.Contains(c.Example, "clusterctl ") {
				t.Errorf("%s has no example", c.CommandPath())
			}
		}
	}
}

func TestHelpGoesToStdout(t *testing.T) {
	stdout, stderr, code := runArgs("member", "add", "--help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "--peer-urls") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
