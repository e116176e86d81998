package datadir_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

// oddNames are valid by membership.ValidateName but would break a careless quoting or parsing.
var oddNames = []string{
	"a", "a b", `$HOME`, "${x}", "`id`", `"q"`, `'s'`, `\`, `\\n`, "#c", "-n", ";x", "a|b", "*",
	"~", "!x", "ü-日本", "é-Ω", strings.Repeat("z", membership.MaxNameLen),
}

// TestEnvironmentRoundTrip prints member add's environment for each odd but valid name, sources
// it with sh as a systemd unit or a script would, and reads ETCD_INITIAL_CLUSTER back with
// ParseInitialCluster: the name and URLs must come back verbatim, so the member starts.
func TestEnvironmentRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	p, err := printer.New(printer.Env)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, name := range oddNames {
		if err := membership.ValidateName(name); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		newURL := "http://10.0.0.9:2380"
		r := &client.AddResult{Member: client.Member{ID: 9, Name: name, PeerURLs: []string{newURL}}}
		r.Members = []client.Member{{ID: 1, Name: "other", PeerURLs: []string{"http://10.0.0.1:2380"}}, r.Member}
		var out bytes.Buffer
		if err := p.MemberAdd(&out, r); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "env")
		if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		// The file's name goes in as $1, so no name is ever part of the script itself.
		script := `set -a; . "$1"; printf '%s\0%s\0%s' "$ETCD_NAME" "$ETCD_INITIAL_CLUSTER" "$ETCD_INITIAL_ADVERTISE_PEER_URLS"`
		got, err := exec.Command(sh, "-c", script, "sh", file).Output()
		if err != nil {
			t.Fatalf("%d %q: sourcing\n%s: %v", i, name, out.String(), err)
		}
		vars := strings.Split(string(got), "\x00")
		if len(vars) != 3 || vars[0] != name {
			t.Fatalf("%q: ETCD_NAME came back as %q from\n%s", name, vars, out.String())
		}
		initial, err := datadir.ParseInitialCluster(vars[1])
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if _, err := datadir.Local(initial, vars[0], membership.SplitURLs(vars[2])); err != nil {
			t.Errorf("%q: the printed environment cannot start its member: %v", name, err)
		}
	}
}
