package contexts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kept = `# written by hand
owner: platform-team
current-context: prod
contexts:
  - name: prod
    endpoints: [https://10.0.0.1:2379, https://10.0.0.2:2379]
    cacert: /etc/ca.crt
    note: the big one # a comment
  - name: lab
    endpoints: 127.0.0.1:2379
`

func write(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPath(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CLUSTERCTL_CONFIG": "/a/c.yaml", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/a/c.yaml"},
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/clusterctl/config.yaml"},
		{map[string]string{"HOME": "/h"}, "/h/.config/clusterctl/config.yaml"},
	} {
		got, err := Path(func(k string) string { return tt.env[k] })
		if err != nil || got != tt.want {
			t.Errorf("Path(%v) = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
	if _, err := Path(func(string) string { return "" }); err == nil {
		t.Error("no HOME: no error")
	}
}

// TestSetKeepsWhatItDoesNotKnow changes one setting and adds a context: every other key,
// comment and value is still there, and the file is 0600.
func TestSetKeepsWhatItDoesNotKnow(t *testing.T) {
	p := write(t, kept, 0o644)
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if created, err := f.Set("prod", map[string]any{"command-timeout": "9s"}); created || err != nil {
		t.Error("prod reported as created")
	}
	if created, err := f.Set("new", map[string]any{"endpoints": []string{"h:1"}, "user": "root"}); !created || err != nil {
		t.Error("new not reported as created")
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{"# written by hand", "owner: platform-team", "note: the big one # a comment", "cacert: /etc/ca.crt", "command-timeout: 9s", "name: new", "current-context: prod"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("saved file lacks %q:\n%s", want, b)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode())
	}
	g, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Get("prod")
	if err != nil || strings.Join(c.Endpoints(), " ") != "https://10.0.0.1:2379 https://10.0.0.2:2379" || !c.TLS() {
		t.Errorf("prod after save: %+v, %v", c, err)
	}
	if c, _ := g.Get("lab"); c.TLS() || c.Endpoints()[0] != "127.0.0.1:2379" {
		t.Errorf("lab after save: %+v", c)
	}
}

func TestUnknownContext(t *testing.T) {
	f, err := Load(write(t, kept, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Get("nope")
	var u *UnknownContextError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "(known: prod, lab)") {
		t.Errorf("Get(nope) = %v", err)
	}
	if err := f.Use("nope"); !errors.As(err, &u) {
		t.Errorf("Use(nope) = %v", err)
	}
	if err := f.Delete("nope"); !errors.As(err, &u) {
		t.Errorf("Delete(nope) = %v", err)
	}
}

func TestDeleteCurrent(t *testing.T) {
	f, _ := Load(write(t, kept, 0o600))
	if err := f.Delete("prod"); err != nil {
		t.Fatal(err)
	}
	if f.Current() != "" || strings.Join(f.Names(), ",") != "lab" {
		t.Errorf("after delete: current %q, names %v", f.Current(), f.Names())
	}
}

func TestPasswordNeedsPrivateFile(t *testing.T) {
	for _, tt := range []struct {
		content string
		mode    os.FileMode
		refused bool
	}{
		{"contexts:\n- name: a\n  user: root\n  password: pw\n", 0o644, true},
		{"contexts:\n- name: a\n  user: root:pw\n", 0o640, true},
		{"contexts:\n- name: a\n  user: root:pw\n", 0o600, false},
		{"contexts:\n- name: a\n  user: root\n", 0o644, false},
	} {
		_, err := Load(write(t, tt.content, tt.mode))
		if (err != nil) != tt.refused || (err != nil && (!strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), "\n"))) {
			t.Errorf("%q mode %v: %v, want refused %v", tt.content, tt.mode, err, tt.refused)
		}
	}
}

func TestMasked(t *testing.T) {
	f, _ := Load(write(t, "contexts:\n- name: a\n  user: root:secret1\n- name: b\n  user: root\n  password: secret2\n", 0o600))
	b, err := f.Masked()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret") || strings.Count(string(b), "REDACTED") != 2 {
		t.Errorf("masked:\n%s", b)
	}
}

func TestBadFiles(t *testing.T) {
	for _, content := range []string{"- a\n- b\n", "contexts: 3\n", "contexts:\n- endpoints: x\n", "contexts:\n- name: a\n- name: a\n", "contexts: [\n"} {
		if _, err := Load(write(t, content, 0o600)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line", content, err)
		}
	}
	f, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if err != nil || len(f.Names()) != 0 {
		t.Errorf("missing file: %v, %v", f, err)
	}
}
