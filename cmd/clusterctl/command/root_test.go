package command

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
)

func TestMain(m *testing.M) {
	// The test binary is clusterctl itself when a test runs it as a separate process (one to
	// kill, for example).
	if os.Getenv(beClusterctl) == "1" {
		os.Exit(Main())
	}
	silenceGRPC()
	// No developer's contexts file reaches a test: the ones that read contexts set their own.
	os.Setenv("CLUSTERCTL_CONFIG", "/nonexistent/clusterctl-test/config.yaml")
	os.Unsetenv("CLUSTERCTL_CONTEXT")
	os.Exit(m.Run())
}

// run is Main for a caller that goes on living, a test: it also closes the connection.
func run(args []string, stdout, stderr io.Writer) int {
	code, g := execute(args, stdout, stderr)
	if g.Client != nil {
		// Closing a connection cannot change what the command did; a client the command did
		// not build is built here without connecting.
		if c, err := g.Client(); err == nil {
			_ = c.Close()
		}
	}
	return code
}

// beClusterctl set to 1 in its environment makes the test binary run clusterctl's Main.
const beClusterctl = "CLUSTERCTL_TEST_BE_CLUSTERCTL"

// listener counts the connections made to it, to prove that nothing was sent.
func listener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := freeport.Listen()
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
		{[]string{ep, "member", "add", "infra3", "--peer-urls=http://a:1", "--dry-run", "--id-file=x.id"}, "Error: --id-file and --dry-run cannot be used together\n"},
		{[]string{ep, "member", "add", "infra3", "--peer-urls=http://a:1", "--id-file=/nonexistent/x.id"}, "Error: --id-file: open /nonexistent/x.id: no such file or directory\n"},
		{[]string{ep, "member", "promote", "infra3", "--dry-run", "--wait"}, "Error: --dry-run and --wait cannot be used together\n"},
		{[]string{ep, "member", "list", "-w", "env"}, "Error: output format \"env\" is not supported by member list (supported: simple, table, json)\n"},
		{[]string{ep, "member", "add", "infra3", "--peer-urls=http://a:1", "--dry-run", "-w", "table"}, "Error: output format \"table\" is not supported by member add --dry-run (supported: simple, json)\n"},
		{[]string{ep, "member", "remove", "a", "-w", "env"}, "Error: output format \"env\" is not supported by member remove (supported: simple, json)\n"},
		{[]string{ep, "member", "remove", "a", "--dry-run", "-w", "env"}, "Error: output format \"env\" is not supported by member remove --dry-run (supported: simple, json)\n"},
		{[]string{ep, "member", "promote", "a", "-w", "table"}, "Error: output format \"table\" is not supported by member promote (supported: simple, json)\n"},
		{[]string{ep, "member", "replace", "infra1", "infra3", "--peer-urls=http://a:1", "-w", "table"}, "Error: output format \"table\" is not supported by member replace (supported: simple, json, env)\n"},
		{[]string{ep, "member", "replace", "infra1", "infra3", "--peer-urls=http://a:1", "--dry-run", "-w", "env"}, "Error: output format \"env\" is not supported by member replace --dry-run (supported: simple, json)\n"},
		{[]string{ep, "member", "history", "-w", "env"}, "Error: output format \"env\" is not supported by member history (supported: simple, table, json)\n"},
		{[]string{ep, "member", "prune", "-w", "env"}, "Error: output format \"env\" is not supported by member prune (supported: simple, json)\n"},
		{[]string{ep, "discovery", "new", "-w", "table"}, "Error: output format \"table\" is not supported by discovery new (supported: simple, json, env)\n"},
		{[]string{ep, "discovery", "status", "abc", "-w", "env"}, "Error: output format \"env\" is not supported by discovery status (supported: simple, table, json)\n"},
		{[]string{ep, "snapshot", "save", "a.db", "-w", "env"}, "Error: output format \"env\" is not supported by snapshot save (supported: simple, json)\n"},
		{[]string{ep, "snapshot", "save", "a.db", "-w", "table"}, "Error: output format \"table\" is not supported by snapshot save (supported: simple, json)\n"},
		{[]string{ep, "snapshot", "restore", "s.db", "--data-dir=d", "--name=a", "--initial-cluster=a=http://10.0.0.1:2380", "--initial-advertise-peer-urls=http://10.0.0.1:2380", "-w", "table"}, "Error: output format \"table\" is not supported by snapshot restore (supported: simple, json)\n"},
		{[]string{ep, "member", "list", "-w", "yaml"}, "Error: unknown output format \"yaml\" (supported: simple, table, json, env)\n"},
		{[]string{ep, "member", "list", "--consistency=x"}, "Error: unknown consistency flag \"x\"\n"},
		{[]string{ep, "member", "list", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "member", "history", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "member", "prune", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "cluster", "status", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "endpoint", "status", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "endpoint", "health", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "discovery", "new", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "version", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "config", "view", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "config", "get-contexts", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "config", "current-context", "x"}, "Error: too many arguments\n"},
		{[]string{ep, "member", "list", "http://a:1"}, "Error: too many arguments, did you mean --peer-urls=http://a:1\n"},
		{[]string{ep, "member", "list", "--bogus"}, "Error: unknown flag: --bogus\n"},
		{[]string{ep, "member", "promote", "x", "--wait=soon"}, "Error: invalid argument \"soon\" for \"--wait\" flag: time: invalid duration \"soon\"\n"},
		{[]string{ep, "member", "bogus"}, "Error: unknown command \"bogus\" for \"clusterctl member\"\n"},
		{[]string{ep, "bogus"}, "Error: unknown command \"bogus\" for \"clusterctl\"\n"},
		{[]string{"--endpoints=ftp://" + addr, "member", "list"}, "Error: endpoint \"ftp://" + addr + "\": only host:port, http://host:port or https://host:port is supported\n"},
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
	a, b := servertest.FreeAddr(t), servertest.FreeAddr(t)
	stdout, stderr, code := runArgs("--endpoints="+a+","+b, "member", "list")
	want := "Error: no endpoint answered: " + a + " (connect: connection refused), " + b + " (connect: connection refused)\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, %q", code, stdout, stderr, want)
	}
}

// TestSettingsPrecedence checks flag over CLUSTERCTL_* over the config file, through the
// endpoint the error names.
func TestSettingsPrecedence(t *testing.T) {
	fromFile, fromEnv, fromFlag := servertest.FreeAddr(t), servertest.FreeAddr(t), servertest.FreeAddr(t)
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

// A config file that cannot be read says why in words: not viper's `Unsupported Config Type ""`.
func TestMissingConfigFile(t *testing.T) {
	dir := t.TempDir()
	ini := filepath.Join(dir, "clusterctl.ini")
	if err := os.WriteFile(ini, []byte("endpoints=a:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"/nonexistent":                 "Error: config file /nonexistent does not exist\n",
		"/nonexistent/clusterctl.yaml": "Error: config file /nonexistent/clusterctl.yaml does not exist\n",
		dir:                            "Error: config file " + dir + " is a directory\n",
		ini:                            "Error: config file " + ini + ": unknown type \"ini\", from its extension; supported: .yaml, .yml, .json, .toml\n",
	} {
		_, stderr, code := runArgs("--config-file="+file, "member", "list")
		if code != 128 || stderr != want {
			t.Errorf("%s: exit %d, %q; want 128, %q", file, code, stderr, want)
		}
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

// silentAddr is a loopback address that completes TCP handshakes (the listen backlog) but never
// speaks HTTP/2: reachable, yet no gRPC server ever answers, so connecting takes the whole limit.
func silentAddr(t *testing.T) string {
	t.Helper()
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// noSettingsFromEnv clears every CLUSTERCTL_* and ETCDCTL_* setting for the test, so that the developer's
// environment cannot change what is checked: viper takes an empty variable as unset.
func noSettingsFromEnv(t *testing.T) {
	t.Helper()
	t.Setenv("CLUSTERCTL_CONFIG_FILE", "")
	for _, name := range globalFlags {
		env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		t.Setenv("CLUSTERCTL_"+env, "")
		t.Setenv("ETCDCTL_"+env, "")
	}
}

func writeConfig(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var noAnswerWithin = regexp.MustCompile(`^Error: (?:no endpoint answered|timed out before any member answered; nothing was changed): (\S+) \(no answer within ([^)]+)\)\n$`)

// connectLimit runs member list with args against endpoints that never answer and returns the
// endpoint the error names and the time connecting was given: --dial-timeout, or what was left
// of --command-timeout when that was shorter. The run takes that long. The dial timeout running
// out is "cannot connect" (2); the command timeout running out is "timed out" (24).
func connectLimit(t *testing.T, wantCode int, args ...string) (string, time.Duration) {
	t.Helper()
	stdout, stderr, code := runArgs(append(args, "member", "list")...)
	m := noAnswerWithin.FindStringSubmatch(stderr)
	if code != wantCode || stdout != "" || m == nil {
		t.Fatalf("%v: exit %d, stdout %q, stderr %q; want %d and one \"no answer within\" line", args, code, stdout, stderr, wantCode)
	}
	d, err := time.ParseDuration(m[2])
	if err != nil {
		t.Fatalf("%v: %q: %v", args, stderr, err)
	}
	return m[1], d
}

// connectedWithin checks the time connecting was given: exactly the dial timeout, or what was
// left of the command timeout, which is less by what the command did before connecting. The
// values the tests set are 200 ms apart, so that much slack still tells them apart.
func connectedWithin(t *testing.T, what, setting string, want time.Duration, args ...string) {
	t.Helper()
	code := exitCannotConnect
	if setting == "command-timeout" {
		code = exitTimedOut
	}
	_, got := connectLimit(t, code, args...)
	if setting == "dial-timeout" && got != want || setting == "command-timeout" && (got > want || got <= want-200*time.Millisecond) {
		t.Errorf("%s: connecting was given %s, want what --%s=%s leaves", what, got, setting, want)
	}
}

// TestTimeoutPrecedence checks --dial-timeout and --command-timeout from the file, the
// environment and the flag, each winning over the ones before it, through the time the error
// says connecting had. For the command timeout the dial timeout is longer than any of them.
func TestTimeoutPrecedence(t *testing.T) {
	for _, setting := range []string{"dial-timeout", "command-timeout"} {
		t.Run(setting, func(t *testing.T) {
			noSettingsFromEnv(t)
			silent := silentAddr(t)
			other := map[string]string{"dial-timeout": "command-timeout", "command-timeout": "dial-timeout"}[setting]
			config := writeConfig(t, "clusterctl.yaml", "endpoints: ["+silent+"]\n"+setting+": 200ms\n"+other+": 1m\n")
			file := "--config-file=" + config
			env := "CLUSTERCTL_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
			connectedWithin(t, "file", setting, 200*time.Millisecond, file)
			t.Setenv(env, "400ms")
			connectedWithin(t, "environment over file", setting, 400*time.Millisecond, file)
			connectedWithin(t, "flag over environment", setting, 600*time.Millisecond, file, "--"+setting+"=600ms")
			// The default is not what any of the above gave; the environment alone applies too.
			connectedWithin(t, "environment alone", setting, 400*time.Millisecond, "--endpoints="+silent, "--"+other+"=1m")
			t.Setenv(env, "5")
			want := "Error: --" + setting + ": time: missing unit in duration \"5\"\n"
			if _, stderr, code := runArgs(file, "member", "list"); code != 128 || stderr != want {
				t.Errorf("bare number: exit %d, %q", code, stderr)
			}
		})
	}
}

// TestConfigFileFormats reads every global setting from a YAML, a JSON and a TOML file.
func TestConfigFileFormats(t *testing.T) {
	silent := silentAddr(t)
	files := map[string]string{
		"clusterctl.yaml": "endpoints: [" + silent + "]\ndial-timeout: 200ms\ncommand-timeout: 400ms\nwrite-out: table\n",
		"clusterctl.json": `{"endpoints": ["` + silent + `"], "dial-timeout": "200ms", "command-timeout": "400ms", "write-out": "table"}`,
		"clusterctl.toml": "endpoints = [\"" + silent + "\"]\ndial-timeout = \"200ms\"\ncommand-timeout = \"400ms\"\nwrite-out = \"table\"\n",
	}
	for name, content := range files {
		t.Run(filepath.Ext(name)[1:], func(t *testing.T) {
			noSettingsFromEnv(t)
			file := "--config-file=" + writeConfig(t, name, content)
			// endpoints and dial-timeout; table is a format member list prints
			if ep, d := connectLimit(t, exitCannotConnect, file); ep != silent || d != 200*time.Millisecond {
				t.Errorf("endpoint %s, connecting given %s; want %s, the dial timeout 200ms", ep, d, silent)
			}
			// command-timeout, once the dial timeout is longer
			connectedWithin(t, "command-timeout", "command-timeout", 400*time.Millisecond, file, "--dial-timeout=1m")
			// write-out: table is refused by member add before anything is sent
			stdout, stderr, code := runArgs(file, "member", "add", "infra3", "--peer-urls=http://127.0.0.1:1")
			if want := "Error: output format \"table\" is not supported by member add (supported: simple, json, env)\n"; code != 128 || stdout != "" || stderr != want {
				t.Errorf("write-out: exit %d, stdout %q, stderr %q; want 128, %q", code, stdout, stderr, want)
			}
			// a flag still wins over the file
			if _, _, code := runArgs(file, "-w", "json", "--endpoints="+servertest.FreeAddr(t), "member", "add", "infra3", "--peer-urls=http://127.0.0.1:1"); code != 2 {
				t.Errorf("-w json over the file's table: exit %d, want 2 (sent, nothing listening)", code)
			}
		})
	}
}

// TestConfigFileFromEnvironment names the file with CLUSTERCTL_CONFIG_FILE; --config-file wins
// over it.
func TestConfigFileFromEnvironment(t *testing.T) {
	noSettingsFromEnv(t)
	a, b := silentAddr(t), silentAddr(t)
	fromEnv := writeConfig(t, "env.yaml", "endpoints: ["+a+"]\ndial-timeout: 200ms\n")
	fromFlag := writeConfig(t, "flag.toml", "endpoints = [\""+b+"\"]\ndial-timeout = \"400ms\"\n")
	t.Setenv("CLUSTERCTL_CONFIG_FILE", fromEnv)
	if ep, d := connectLimit(t, exitCannotConnect); ep != a || d != 200*time.Millisecond {
		t.Errorf("CLUSTERCTL_CONFIG_FILE: endpoint %s, %s; want %s, 200ms", ep, d, a)
	}
	if ep, d := connectLimit(t, exitCannotConnect, "--config-file="+fromFlag); ep != b || d != 400*time.Millisecond {
		t.Errorf("--config-file over CLUSTERCTL_CONFIG_FILE: endpoint %s, %s; want %s, 400ms", ep, d, b)
	}
	// the environment's other settings still win over the file it names
	t.Setenv("CLUSTERCTL_DIAL_TIMEOUT", "300ms")
	if ep, d := connectLimit(t, exitCannotConnect); ep != a || d != 300*time.Millisecond {
		t.Errorf("CLUSTERCTL_DIAL_TIMEOUT over the file: endpoint %s, %s; want %s, 300ms", ep, d, a)
	}
	t.Setenv("CLUSTERCTL_CONFIG_FILE", "/nonexistent/clusterctl.yaml")
	if _, stderr, code := runArgs("member", "list"); code != 128 || stderr != "Error: config file /nonexistent/clusterctl.yaml does not exist\n" {
		t.Errorf("missing file named by the environment: exit %d, %q", code, stderr)
	}
}

// TestWriteOutFlagOverEnvironment: -w wins over CLUSTERCTL_WRITE_OUT, which wins over the file.
func TestWriteOutFlagOverEnvironment(t *testing.T) {
	noSettingsFromEnv(t)
	dead := servertest.FreeAddr(t)
	config := writeConfig(t, "clusterctl.json", `{"endpoints": ["`+dead+`"], "write-out": "json"}`)
	t.Setenv("CLUSTERCTL_WRITE_OUT", "env")
	if _, stderr, code := runArgs("--config-file="+config, "member", "list"); code != 128 || !strings.Contains(stderr, `"env"`) {
		t.Errorf("environment over file: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runArgs("--config-file="+config, "-w", "table", "member", "list"); code != 2 || !strings.Contains(stderr, dead) {
		t.Errorf("flag over environment: exit %d, %q; want 2 (format accepted, nothing listening)", code, stderr)
	}
}

// TestWriteOutCompletion: -w offers the formats the command being completed prints, from the
// printer's table, so a format a command gains is offered with no change here; --consistency
// offers etcdctl's two, on each command that has it.
func TestWriteOutCompletion(t *testing.T) {
	noSettingsFromEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"member", "replace", "infra1", "infra3", "-w", ""}, "simple\njson\nenv\n:4\n"},
		{[]string{"member", "replace", "-w", "j"}, "json\n:4\n"},
		{[]string{"member", "list", "-w", ""}, "simple\ntable\njson\n:4\n"},
		{[]string{"member", "list", "--consistency", ""}, "l\tlinearizable, through the leader\ns\tserializable, from the member answering\n:4\n"},
		{[]string{"member", "history", "--consistency", ""}, "l\tlinearizable, through the leader\ns\tserializable, from the member answering\n:4\n"},
	}
	for _, tt := range tests {
		stdout, _, code := runArgs(append([]string{"__complete"}, tt.args...)...)
		if code != 0 || stdout != tt.want {
			t.Errorf("__complete %q: exit %d, %q; want %q", tt.args, code, stdout, tt.want)
		}
	}
}
