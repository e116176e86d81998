package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A member.db that cannot be used is refused with what is wrong, and left byte for byte as it
// was: a 0-byte file used to be rewritten as an empty database.
func TestOpenRefusesCorruptWithoutWriting(t *testing.T) {
	tests := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"empty", nil, "it has 0 bytes"},
		{"text", []byte("not a database at all\n"), "invalid database"},
		{"zeros", make([]byte, 16384), "invalid"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "is empty or corrupt") {
			t.Errorf("%s: got %v", tt.name, err)
		} else if !strings.Contains(ce.Reason, tt.reason) {
			t.Errorf("%s: reason %q, want it to say %q", tt.name, ce.Reason, tt.reason)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, tt.data) {
			t.Errorf("%s: the refused file was changed: %d bytes now", tt.name, len(got))
		}
	}
}

// A bbolt file that is not a member's database (etcd's, say, which has a meta bucket too) is
// refused by Load rather than dereferencing a missing bucket.
func TestLoadRefusesForeignDatabase(t *testing.T) {
	for _, buckets := range [][]string{{"meta"}, {"meta", "log"}, {"key", "meta", "members"}} {
		dir := t.TempDir()
		db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			for _, b := range buckets {
				tx.CreateBucket([]byte(b))
			}
			return nil
		})
		db.Close()
		st, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Load()
		st.Close()
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "not a member's database") {
			t.Errorf("%v: got %v", buckets, err)
		}
	}
}
