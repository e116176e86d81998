package command

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// contextsHome gives the test a HOME of its own holding the contexts file content (none when
// ""), and returns the file's path.
func contextsHome(t *testing.T, content string) string {
	t.Helper()
	noSettingsFromEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CLUSTERCTL_CONFIG", "")
	t.Setenv("CLUSTERCTL_CONTEXT", "")
	path := filepath.Join(home, ".config", "clusterctl", "config.yaml")
	if content != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// resolved parses args as the root's global flags and resolves them as a verb would: the
// endpoints and command timeout the client would be built with. Nothing is dialed.
func resolved(t *testing.T, args ...string) (endpoints string, timeout time.Duration) {
	t.Helper()
	g := &Globals{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	root := newRootCmd(g)
	if err := root.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := g.resolve(root.PersistentFlags()); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	c, err := g.Client()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(c.GivenEndpoints(), ","), g.CommandTimeout
}

const precedenceContexts = `current-context: ctx
contexts:
  - name: ctx
    endpoints: [ctx:1]
    command-timeout: 5m
`

// TestContextPrecedence is the documented table, a row each: flags > CLUSTERCTL_* > ETCDCTL_* >
// the config file > the context > the defaults, for a list (endpoints) and a duration.
func TestContextPrecedence(t *testing.T) {
	type layers struct{ flag, clusterctl, etcdctl, file, context bool }
	for _, tt := range []struct {
		name     string
		set      layers
		endpoint string
		timeout  time.Duration
	}{
		{"flags over CLUSTERCTL_*", layers{true, true, true, true, true}, "flag:1", 1 * time.Minute},
		{"CLUSTERCTL_* over ETCDCTL_*", layers{false, true, true, true, true}, "clusterctl:1", 2 * time.Minute},
		{"ETCDCTL_* over the config file", layers{false, false, true, true, true}, "etcdctl:1", 3 * time.Minute},
		{"the config file over the context", layers{false, false, false, true, true}, "file:1", 4 * time.Minute},
		{"the context over the defaults", layers{false, false, false, false, true}, "ctx:1", 5 * time.Minute},
		{"the defaults", layers{}, "127.0.0.1:2379", 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			content := ""
			if tt.set.context {
				content = precedenceContexts
			}
			contextsHome(t, content)
			var args []string
			if tt.set.flag {
				args = append(args, "--endpoints=flag:1", "--command-timeout=1m")
			}
			if tt.set.clusterctl {
				t.Setenv("CLUSTERCTL_ENDPOINTS", "clusterctl:1")
				t.Setenv("CLUSTERCTL_COMMAND_TIMEOUT", "2m")
			}
			if tt.set.etcdctl {
				t.Setenv("ETCDCTL_ENDPOINTS", "etcdctl:1")
				t.Setenv("ETCDCTL_COMMAND_TIMEOUT", "3m")
			}
			if tt.set.file {
				args = append(args, "--config-file="+writeConfig(t, "c.yaml", "endpoints: [file:1]\ncommand-timeout: 4m\n"))
			}
			eps, timeout := resolved(t, args...)
			if eps != tt.endpoint || timeout != tt.timeout {
				t.Errorf("endpoints %s, command timeout %s; want %s, %s", eps, timeout, tt.endpoint, tt.timeout)
			}
		})
	}
}

// TestContextChoice: --context over CLUSTERCTL_CONTEXT over the current context; the config
// verbs never read one; an unknown one is exit 128 naming the known ones.
func TestContextChoice(t *testing.T) {
	path := contextsHome(t, `current-context: a
contexts:
  - name: a
    endpoints: a:1
  - name: b
    endpoints: [b:1, b:2]
  - name: c
    endpoints: c:1
`)
	if eps, _ := resolved(t); eps != "a:1" {
		t.Errorf("current context: %s", eps)
	}
	t.Setenv("CLUSTERCTL_CONTEXT", "b")
	if eps, _ := resolved(t); eps != "b:1,b:2" {
		t.Errorf("CLUSTERCTL_CONTEXT over the current context: %s", eps)
	}
	if eps, _ := resolved(t, "--context=c"); eps != "c:1" {
		t.Errorf("--context over CLUSTERCTL_CONTEXT: %s", eps)
	}
	t.Setenv("CLUSTERCTL_CONTEXT", "zz")
	stdout, stderr, code := runArgs("member", "list")
	want := `Error: context "zz" not found in ` + path + " (known: a, b, c)\n"
	if code != 128 || stdout != "" || stderr != want {
		t.Errorf("unknown context: exit %d, %q, %q; want 128, %q", code, stdout, stderr, want)
	}
	// The config verbs mend the file whatever context is named.
	if stdout, stderr, code := runArgs("config", "use-context", "c"); code != 0 || stdout != "Switched to context \"c\"\n" {
		t.Errorf("use-context with a broken CLUSTERCTL_CONTEXT: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestConfigVerbsRefuse: bad command lines of the config verbs are exit 128 in one line, and
// leave the file as it was.
func TestConfigVerbsRefuse(t *testing.T) {
	const content = "contexts:\n  - name: a\n    endpoints: a:1\n"
	path := contextsHome(t, content)
	for _, args := range [][]string{
		{"config", "set-context"},
		{"config", "set-context", "a", "b"},
		{"config", "set-context", ""},
		{"config", "set-context", "a", "--dial-timeout=5"},
		{"config", "set-context", "a", "--endpoints=http://h:1/path"},
		{"config", "set-context", "a", "--insecure-transport=maybe"},
		{"config", "set-context", "n", "--password=x"},
		{"config", "set-context", "a", "--context=b"},
		{"config", "set-context", "a", "-w", "json"},
		{"config", "use-context", "zz"},
		{"config", "delete-context", "zz"},
		{"config", "get-contexts", "x"},
		{"config", "view", "-w", "table"},
	} {
		stdout, stderr, code := runArgs(args...)
		if code != 128 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "Error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 128 and one Error: line", args, code, stdout, stderr)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != content {
		t.Errorf("the file changed:\n%s", b)
	}
}

// TestSetContextChangesOnlyWhatIsGiven: a second set-context changes the flags it is given and
// keeps the others; a write where the directory cannot take it is exit 30, the file unchanged.
func TestSetContextChangesOnlyWhatIsGiven(t *testing.T) {
	path := contextsHome(t, "")
	if _, stderr, code := runArgs("config", "set-context", "a", "--endpoints=a:1,a:2", "--dial-timeout=3s", "--user=root"); code != 0 {
		t.Fatalf("create: %d %s", code, stderr)
	}
	if _, stderr, code := runArgs("config", "set-context", "a", "--dial-timeout=4s"); code != 0 {
		t.Fatalf("update: %d %s", code, stderr)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"endpoints: ['a:1', 'a:2']", "dial-timeout: 4s", "user: root"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("file lacks %q:\n%s", want, b)
		}
	}
	dir := filepath.Dir(path)
	if !makeReadOnly(t, dir) {
		t.Skip("this filesystem cannot make a directory read-only for root (no immutable attribute)")
	}
	_, stderr, code := runArgs("config", "set-context", "a", "--dial-timeout=9s")
	if code != 30 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("read-only directory: exit %d, %q; want 30", code, stderr)
	}
	if after, _ := os.ReadFile(path); string(after) != string(b) {
		t.Errorf("the file changed:\n%s", after)
	}
	// The writers' lock stays beside the file, from the writes before.
	if es, _ := os.ReadDir(dir); len(es) != 2 || es[0].Name() != "config.yaml" || es[1].Name() != "config.yaml.lock" {
		t.Errorf("%v left in %s, want the file and its lock alone", es, dir)
	}
}

// TestPasswordFile: --password-file (a context's reference to its password) is read when the
// client is built, its first line alone; a missing or empty file, or one given with --password
// or without --user, is exit 128 before anything is dialed.
func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "pw"), filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("s3cret\r\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := security{login: login{user: "root:x", passwordFile: good, place: commandLinePlace(newRootCmd(&Globals{}).PersistentFlags())}}
	if u, pw, err := s.credentials(nil); u != "root:x" || pw != "s3cret" || err != nil {
		t.Errorf("credentials = %q, %q, %v; want the whole user and the first line", u, pw, err)
	}
	contextsHome(t, "")
	addr, conns := listener(t)
	for args, want := range map[string]string{
		"--user=root --password-file=" + filepath.Join(dir, "missing"): "Error: --password-file: open " + filepath.Join(dir, "missing") + ": no such file or directory\n",
		"--user=root --password-file=" + empty:                         "Error: --password-file " + empty + ": the first line is empty\n",
		"--password-file=" + good:                                      "Error: --password-file needs --user\n",
		"--user=root --password=x --password-file=" + good:             "Error: --password and --password-file: give one\n",
	} {
		stdout, stderr, code := runArgs(append(strings.Fields(args), "--endpoints="+addr, "member", "list")...)
		if code != 128 || stdout != "" || stderr != want {
			t.Errorf("%s: exit %d, %q, %q; want 128, %q", args, code, stdout, stderr, want)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections made", n)
	}
}
