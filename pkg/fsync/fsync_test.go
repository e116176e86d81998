package fsync

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Dir(dir); err != nil {
		t.Fatal(err)
	}
	if err := Dir(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("a missing directory: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v; want new", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	// A directory that cannot take the temporary file leaves nothing behind and path as it was.
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); !os.IsNotExist(err) {
		t.Fatalf("into a missing directory: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("left %d entries in the directory, want 1", len(es))
	}
}
