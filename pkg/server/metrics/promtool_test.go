package metrics

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var promtool struct {
	once sync.Once
	path string
	why  string
}

// promtoolPath returns promtool, installing Debian's prometheus package through
// scripts/install-promtool.sh when it is missing; the test skips, saying why, only when that
// cannot be done (not root, no apt-get, no package).
func promtoolPath(t *testing.T) string {
	t.Helper()
	promtool.once.Do(func() {
		if p, err := exec.LookPath("promtool"); err == nil {
			promtool.path = p
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command("../../../scripts/install-promtool.sh")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			promtool.why = "promtool is not installed and cannot be installed: " + strings.TrimSpace(stderr.String())
			return
		}
		promtool.path = strings.TrimSpace(string(out))
	})
	if promtool.path == "" {
		t.Skip(promtool.why)
	}
	return promtool.path
}

// TestPromtoolCheckMetrics lints a whole scrape, every family with series, with promtool: no
// finding is accepted.
func TestPromtoolCheckMetrics(t *testing.T) {
	bin := promtoolPath(t)
	m := New(Options{})
	exercise(m)
	m.ChangeDecided(1, nil)
	text, _ := scrape(t, m)

	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics (%v), want no findings:\n%s", err, out)
	}
}
