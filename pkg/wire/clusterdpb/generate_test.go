package clusterdpb_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedUpToDate regenerates the Go of clusterd.proto into a temporary directory, as
// `make proto` does, and fails when the checked-in files differ: an edit to the .proto without
// `make proto`, or a plugin version changed without regenerating. The tools are built once under
// .cache/proto (minutes, the first time), so later runs take a second or two.
func TestGeneratedUpToDate(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command("../../../scripts/genproto.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/genproto.sh: %v\n%s", err, b)
	}
	gen, err := filepath.Glob(filepath.Join(out, "*.go"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("nothing generated (%v)", err)
	}
	checkedIn, _ := filepath.Glob("*.pb.go")
	if len(checkedIn) != len(gen) {
		t.Errorf("%d generated files, %d checked in: run make proto", len(gen), len(checkedIn))
	}
	for _, g := range gen {
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Base(g))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make proto", filepath.Base(g))
		}
	}
}
