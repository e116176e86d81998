package command

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/internal/testkit/treecopy"
)

// The real etcd 3.7.1 data directory and snapshot files pkg/datadir's tests read.
const (
	etcdDataDir      = "../../../pkg/datadir/testdata/etcd-3.7.1-dir"
	etcdSnapshotFile = "../../../pkg/datadir/testdata/etcd-3.7.1.db"
	clusterdSnapshot = "../../../pkg/datadir/testdata/clusterd.db"
)

// datadir status and check, offline: the output of a real etcd directory, every refusal in one
// line with its exit code, and no client setting used.
func TestDataDirCommands(t *testing.T) {
	out, errOut, code := runArgs("--endpoints=unix:///x", "datadir", "status", etcdDataDir)
	if code != exitOK || errOut != "" || !strings.Contains(out, "\nRestart from: "+etcdDataDir+"\n") || !strings.Contains(out, "member ID: ca9cf1dbe2fb80f1\n") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runArgs("datadir", "check", etcdDataDir, etcdSnapshotFile, clusterdSnapshot)
	want := etcdDataDir + ": sound (etcd)\n" + etcdSnapshotFile + ": sound (etcd)\n" + clusterdSnapshot + ": sound (clusterd)\n"
	if code != exitOK || errOut != "" || out != want {
		t.Errorf("check: exit %d\n%s%s", code, out, errOut)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"datadir", "status"}, exitBadArgs, "Error: no data directory given\n"},
		{[]string{"datadir", "check"}, exitBadArgs, "Error: no data directory or snapshot file given\n"},
		{[]string{"datadir", "status", "-w", "env", etcdDataDir}, exitBadArgs, "Error: output format \"env\" is not supported by datadir status (supported: simple, table, json)\n"},
		{[]string{"datadir", "check", "-w", "table", etcdDataDir}, exitBadArgs, "Error: output format \"table\" is not supported by datadir check (supported: simple, json)\n"},
		{[]string{"datadir", "status", missing}, exitBadArgs, "Error: " + missing + " is not a data directory: it does not exist\n"},
		{[]string{"datadir", "status", etcdSnapshotFile}, exitBadArgs, "Error: " + etcdSnapshotFile + " is not a data directory: it is not a directory\n"},
		{[]string{"datadir", "check", "root_test.go"}, exitCorruptSnapshot, "Error: snapshot file is corrupt or truncated: its SHA-256 does not match\n"},
		{[]string{"datadir", "reset-term"}, exitBadArgs, "Error: no data directory given\n"},
		{[]string{"datadir", "reset-term", "-w", "json", etcdDataDir}, exitBadArgs, "Error: output format \"json\" is not supported by datadir reset-term (supported: simple)\n"},
		{[]string{"datadir", "reset-term", etcdDataDir}, exitBadArgs, "Error: the stored term is not past 2^63: nothing to reset\n"},
	} {
		out, errOut, code := runArgs(tt.args...)
		if code != tt.code || out != "" || errOut != tt.err {
			t.Errorf("%v: exit %d\n%s%s", tt.args, code, out, errOut)
		}
	}
}

// A directory whose database another process holds for writing, as a running member holds it,
// is refused with exit 25 and nothing printed.
func TestDataDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := treecopy.Copy(etcdDataDir, dir); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, verb := range []string{"status", "check", "reset-term"} {
		out, errOut, code := runArgs("datadir", verb, dir)
		if code != exitInUse || out != "" || errOut != "Error: data directory "+dir+" is in use by a running member; stop it first\n" {
			t.Errorf("%s: exit %d\n%s%s", verb, code, out, errOut)
		}
	}
}

// The printed clusterctl lines of datadir status carry the context, the TLS files (absolute)
// and the login of the command: a password file as given, a placeholder and the line saying so
// for a password given inline, never the password.
func TestDataDirStatusPrintsTheOperatorsFlags(t *testing.T) {
	contextsHome(t, "current-context: prod\ncontexts:\n  - name: prod\n    endpoints: https://10.0.0.1:2379\n")
	ca, err := filepath.Abs("ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runArgs("--cacert=ca.pem", "--user=root:s3cret", "datadir", "status", etcdDataDir)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	flags := " --context=prod --cacert=" + ca + " --user=root --password-file='<PASSWORD_FILE>' member list\n"
	if !strings.Contains(out, flags) || strings.Contains(out, "s3cret") {
		t.Errorf("want every clusterctl line with%q and no password:\n%s", flags, out)
	}
	if !strings.Contains(out, "Before running: replace <PASSWORD_FILE> with a file holding the password on its first line") {
		t.Errorf("the placeholder is not told:\n%s", out)
	}
}

// printedLogin: the user's name and its password source, never the password.
func TestPrintedLogin(t *testing.T) {
	for _, tt := range []struct {
		s    security
		want string
	}{
		{security{}, ""},
		{security{login: login{user: "root"}}, "--user=root"},
		{security{login: login{user: "root:pw"}}, "--user=root --password-file=<PASSWORD_FILE>"},
		{security{login: login{user: "a:b", password: "pw"}}, "--user=a:b --password-file=<PASSWORD_FILE>"},
		{security{login: login{user: "root", passwordFile: "/etc/pw"}}, "--user=root --password-file=/etc/pw"},
	} {
		if got := strings.Join(printedLogin(tt.s), " "); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.s, got, tt.want)
		}
	}
}
