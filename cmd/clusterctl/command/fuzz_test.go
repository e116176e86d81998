package command

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfigFile: whatever a config file holds, in any of the types clusterctl reads, reading
// and settling the settings fails with a bad-arguments error or succeeds; nothing panics.
func FuzzConfigFile(f *testing.F) {
	f.Add("yaml", "endpoints: [127.0.0.1:2379]\ndial-timeout: 200ms\nwrite-out: table\n")
	f.Add("json", `{"endpoints": ["a:1"], "command-timeout": "1s", "user": "root:x"}`)
	f.Add("toml", "endpoints = [\"a:1\"]\ndial-timeout = \"5\"\n")
	f.Add("yaml", "endpoints: {a: [1, 2]}\ndial-timeout: [1]\n")
	f.Add("yaml", "&a [*a]")
	f.Fuzz(func(t *testing.T, ext, content string) {
		if ext != "yaml" && ext != "json" && ext != "toml" {
			return
		}
		path := filepath.Join(t.TempDir(), "clusterctl."+ext)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		g := &Globals{Out: os.Stdout, Err: os.Stderr}
		// A fuzz worker has no terminal to ask a password on.
		g.askPassword = func() (string, error) { return "", errors.New("no terminal") }
		root := newRootCmd(g)
		flags := root.PersistentFlags()
		if err := flags.Set("config-file", path); err != nil {
			t.Fatal(err)
		}
		v, err := loadSettings(flags)
		if err != nil {
			if exitCode(err) != exitBadArgs {
				t.Errorf("%q: %v exits %d", content, err, exitCode(err))
			}
			return
		}
		if g.settle(v, login{}) == nil {
			_, _ = g.Client()
		}
	})
}
