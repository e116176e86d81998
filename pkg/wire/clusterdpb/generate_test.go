package clusterdpb_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGeneratedUpToDate checks generated.sum, which `make proto` (scripts/genproto.sh) writes
// when it generates the Go, against the tree: the hash of the script, of every .proto and of
// every generated file, and the versions go.mod requires of the modules the generation reads.
// An edit to a .proto or to the script without `make proto`, a generated file edited by hand, or
// a module bumped without regenerating fails, and no code generator is built to tell.
func TestGeneratedUpToDate(t *testing.T) {
	f, err := os.Open("generated.sum")
	if err != nil {
		t.Fatalf("%v: run make proto", err)
	}
	defer f.Close()
	sums := map[string]string{}
	var modules []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case len(fields) == 2 && len(fields[0]) == sha256.Size*2:
			sums[fields[1]] = fields[0]
		case len(fields) == 2:
			modules = append(modules, fields[0]+" "+fields[1])
		default:
			t.Fatalf("generated.sum: %q: run make proto", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	root := "../../.."
	want := []string{"scripts/genproto.sh"}
	for _, pattern := range []string{"*.proto", "*.pb.go"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			want = append(want, "pkg/wire/clusterdpb/"+file)
		}
	}
	for _, file := range want {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if sums[file] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s changed since make proto: run make proto", file)
		}
		delete(sums, file)
	}
	for file := range sums {
		t.Errorf("%s is gone since make proto: run make proto", file)
	}

	out, err := exec.Command("go", "list", "-m", "google.golang.org/protobuf", "go.etcd.io/raft/v3").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !slices.Equal(got, modules) {
		t.Errorf("go.mod requires %q, the code was generated with %q: run make proto", got, modules)
	}
}
