package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tests build the binaries with the tags make build uses, or they would test other binaries
// than the ones that ship.
func TestBuildTagsAreMakeBuilds(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TAGS := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no TAGS := line")
	}
	if got := strings.TrimSpace(string(m[1])); got != BuildTags {
		t.Errorf("Makefile TAGS = %q, BuildTags = %q", got, BuildTags)
	}
	if !regexp.MustCompile(`(?m)^BUILD := .* -tags=\$\(TAGS\) `).Match(mk) {
		t.Error("Makefile: BUILD does not use -tags=$(TAGS)")
	}
	// Build.Release claims to build as BUILD does: the bench measures what ships.
	build := regexp.MustCompile(`(?m)^BUILD := (.*)$`).FindSubmatch(mk)
	if build == nil {
		t.Fatal("Makefile: no BUILD := line")
	}
	for _, flag := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags=-s\ -w`} {
		if !strings.Contains(string(build[1]), flag) {
			t.Errorf("Makefile BUILD = %q has no %s, which Build.Release uses", build[1], flag)
		}
	}
}

// grpcnotrace is what keeps golang.org/x/net/trace, and html/template with it, out of both
// binaries. A grpc release that dropped the tag would bring them back without a build error.
func TestBuildTagsKeepTraceOut(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "-tags="+BuildTags, "./cmd/clusterctl", "./cmd/clusterd")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "golang.org/x/net/trace" {
			t.Errorf("the binaries link %s despite -tags=%s", pkg, BuildTags)
		}
	}
}
