package command

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoginPrecedence is docs/commands/clusterctl.md's login table, row by row: the login (user,
// password, password file) is taken whole from the command line, else the environment, else the
// config file, else the context; --user= drops it; every error names where its value came from.
func TestLoginPrecedence(t *testing.T) {
	dir := t.TempDir()
	ctxPW, cfgPW := filepath.Join(dir, "ctx.pw"), filepath.Join(dir, "cfg.pw")
	for p, pw := range map[string]string{ctxPW: "ctxpw\n", cfgPW: "cfgpw\n"} {
		if err := os.WriteFile(p, []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing")
	const ctxLogin = "    user: ops\n    password-file: %s\n"
	for _, row := range []struct {
		name    string
		context string // the context prod's login lines, "" for none
		config  string // the config file's login lines, "" for no file
		env     map[string]string
		flags   []string
		// user and password the client gets, or the error
		user, password, err string
	}{
		{name: "no login anywhere"},
		{name: "the context's login", context: "    user: ops\n    password-file: " + ctxPW + "\n", user: "ops", password: "ctxpw"},
		{name: "--user name:password replaces the context's", context: "    user: ops\n    password-file: " + missing + "\n",
			flags: []string{"--user=root:PASS"}, user: "root", password: "PASS"},
		{name: "--user and --password replace the context's", context: "    user: ops\n    password-file: " + missing + "\n",
			flags: []string{"--user=root", "--password=PASS"}, user: "root", password: "PASS"},
		{name: "--user and --password-file replace the context's", context: "    user: ops\n    password: x\n",
			flags: []string{"--user=root", "--password-file=" + cfgPW}, user: "root", password: "cfgpw"},
		{name: "a bare --user asks, never reading the context's password", context: "    user: ops\n    password-file: " + ctxPW + "\n",
			flags: []string{"--user=root"}, err: "--user root: no password given (no terminal): pass --password, --user root:PASSWORD or ETCDCTL_PASSWORD, or run in a terminal to be asked"},
		{name: "--user= drops the context's login", context: "    user: ops\n    password-file: " + missing + "\n", flags: []string{"--user="}},
		{name: "ETCDCTL_USER name:password replaces the context's", context: "    user: ops\n    password-file: " + missing + "\n",
			env: map[string]string{"ETCDCTL_USER": "root:PASS"}, user: "root", password: "PASS"},
		{name: "ETCDCTL_USER and ETCDCTL_PASSWORD replace the context's", context: "    user: ops\n    password-file: " + missing + "\n",
			env: map[string]string{"ETCDCTL_USER": "root", "ETCDCTL_PASSWORD": "PASS"}, user: "root", password: "PASS"},
		{name: "CLUSTERCTL_USER over ETCDCTL_USER, one place", env: map[string]string{"CLUSTERCTL_USER": "root", "ETCDCTL_USER": "bob", "ETCDCTL_PASSWORD": "PASS"},
			user: "root", password: "PASS"},
		{name: "ETCDCTL_PASSWORD alone never meets the context's user", context: "    user: ops\n    password-file: " + ctxPW + "\n",
			env: map[string]string{"ETCDCTL_PASSWORD": "PASS"}, err: "ETCDCTL_PASSWORD needs CLUSTERCTL_USER or ETCDCTL_USER"},
		{name: "--password alone never meets ETCDCTL_USER", env: map[string]string{"ETCDCTL_USER": "root"},
			flags: []string{"--password=PASS"}, err: "--password needs --user"},
		{name: "the flags over the environment, whole", env: map[string]string{"ETCDCTL_USER": "bob", "ETCDCTL_PASSWORD": "PASS"},
			flags: []string{"--user=root:other"}, user: "root", password: "other"},
		{name: "--password and --password-file", flags: []string{"--user=root", "--password=x", "--password-file=" + cfgPW},
			err: "--password and --password-file: give one"},
		{name: "ETCDCTL_PASSWORD and CLUSTERCTL_PASSWORD_FILE", env: map[string]string{"ETCDCTL_USER": "root", "ETCDCTL_PASSWORD": "x", "CLUSTERCTL_PASSWORD_FILE": cfgPW},
			err: "ETCDCTL_PASSWORD and CLUSTERCTL_PASSWORD_FILE: give one"},
		{name: "the config file over the context", context: "    user: ops\n    password-file: " + missing + "\n",
			config: "user: root\npassword-file: " + cfgPW + "\n", user: "root", password: "cfgpw"},
		{name: "a password in the config file never meets the context's user", context: "    user: ops\n",
			config: "password: x\n", err: "password in config file {config} needs user in config file {config}"},
		{name: "the context's password file, missing", context: "    user: ops\n    password-file: " + missing + "\n",
			err: "password-file in context prod: open " + missing + ": no such file or directory"},
		{name: "the context's password and password file", context: "    user: ops\n    password: x\n    password-file: " + ctxPW + "\n",
			err: "password in context prod and password-file in context prod: give one"},
		{name: "the context's password file without its user", context: "    password-file: " + ctxPW + "\n",
			err: "password-file in context prod needs user in context prod"},
		{name: "the context's bare user asks", context: "    user: ops\n",
			err: "user ops in context prod: no password given (no terminal): pass --password, --user ops:PASSWORD or ETCDCTL_PASSWORD, or run in a terminal to be asked"},
	} {
		t.Run(row.name, func(t *testing.T) {
			file := "current-context: prod\ncontexts:\n  - name: prod\n    endpoints: 127.0.0.1:1\n" + row.context
			contextsHome(t, file)
			for k, v := range row.env {
				t.Setenv(k, v)
			}
			args := row.flags
			config := ""
			if row.config != "" {
				config = writeConfig(t, "c.yaml", row.config)
				args = append(args, "--config-file="+config)
			}
			user, password, err := loginFor(t, args)
			want := strings.ReplaceAll(row.err, "{config}", config)
			switch {
			case want != "" && (err == nil || err.Error() != want):
				t.Errorf("error %v, want %q", err, want)
			case want == "" && err != nil:
				t.Errorf("error %v, want user %q", err, row.user)
			case want == "" && (user != row.user || password != row.password):
				t.Errorf("user %q password %q, want %q %q", user, password, row.user, row.password)
			}
		})
	}
}

// loginFor resolves a command line's login as a verb does and returns what the client gets.
func loginFor(t *testing.T, args []string) (user, password string, err error) {
	t.Helper()
	f := newRootCmd(&Globals{}).PersistentFlags()
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	v, err := loadSettings(f)
	if err != nil {
		t.Fatal(err)
	}
	c, err := applyContext(v, f)
	if err != nil {
		t.Fatal(err)
	}
	l, err := commandLogin(f, v, c.Name, c.Settings)
	if err != nil {
		return "", "", err
	}
	s, err := securitySettings(v, l)
	if err != nil {
		t.Fatal(err)
	}
	return s.credentials(func() (string, error) { return "", errors.New("no terminal") })
}
