package sdnotify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitDoc = "../../../docs/systemd.md"

// unitFromDoc returns the unit docs/systemd.md shows: the ```ini block after its
// `<!-- unit: clusterd@.service -->` marker. The test checks the page's own text, so the
// unit people copy is the unit that was verified.
func unitFromDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(unitDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- unit: clusterd@.service -->\n```ini\n")
	if !ok {
		t.Fatalf("%s: no unit block after the <!-- unit: clusterd@.service --> marker", unitDoc)
	}
	unit, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the unit block does not end", unitDoc)
	}
	return unit
}

func TestUnitInDocSaysWhatClusterdNeeds(t *testing.T) {
	unit := unitFromDoc(t)
	for _, line := range []string{
		"Type=notify",
		"RestartPreventExitStatus=3",
		"EnvironmentFile=/etc/clusterd/%i.env",
		"ExecStart=/usr/local/bin/clusterd",
	} {
		if !strings.Contains(unit, "\n"+line+"\n") {
			t.Errorf("the unit in %s has no line %q", unitDoc, line)
		}
	}
}

// TestUnitInDocVerifies runs systemd-analyze verify on the page's unit, as an instance for a
// member m4, with ExecStart pointed at a stub (verify checks that the binary is executable).
// verify exits 0 on many mistakes it only warns about, so any output fails the test too.
func TestUnitInDocVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian's systemd package): the unit cannot be verified here")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "clusterd")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(unitFromDoc(t), "/usr/local/bin/clusterd", stub)
	if err := os.WriteFile(filepath.Join(dir, "clusterd@.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", filepath.Join(dir, "clusterd@m4.service"))
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify (%v):\n%s\nthe unit:\n%s", err, out, unit)
	}
}
