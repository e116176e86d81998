package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// FuzzLoad: a member.db of any bytes is read by LoadFile without a change, and opened and
// loaded, or refused with an error, without a panic; a refused file is left as it was. The seed
// is a real member database.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1)}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1)}, c, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Save(Update{Entries: []*raftpb.Entry{entry(2, 1)}}); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// The read-only loader of the offline tools, first: it must leave every file as it was.
		if _, err := LoadFile(dir); err != nil && !refused(err) {
			t.Fatalf("LoadFile: %T %v", err, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("LoadFile changed the file")
		}
		s, err := Open(dir)
		if err != nil {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("a refused member.db was changed: %v", err)
			}
			return
		}
		defer s.Close()
		if _, err := s.Load(); err != nil && !refused(err) {
			t.Fatalf("Load: %T %v", err, err)
		}
	})
}

// refused reports an error of the kinds a member.db is refused with: no member, damaged, or of an
// earlier format.
func refused(err error) bool {
	return errors.Is(err, ErrNotBootstrapped) || errors.As(err, new(*CorruptError)) || errors.As(err, new(*FormatError))
}

// FuzzSnapshotCluster: a snapshot's data of any bytes is decoded or refused without a panic, and
// a membership decoded is encoded again into data that decodes to the same.
func FuzzSnapshotCluster(f *testing.F) {
	for _, n := range []int{0, 3, 300} {
		data, err := SnapshotData(longHistory(f, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"history":{"records":"","dropped":2},"id":"9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := snapshotCluster(data)
		if err != nil {
			return
		}
		again, err := SnapshotData(c)
		if err != nil {
			t.Fatalf("encoding a decoded membership: %v", err)
		}
		back, err := snapshotCluster(again)
		if err != nil {
			t.Fatalf("%q decoded, encoded as %q, refused: %v", data, again, err)
		}
		if !reflect.DeepEqual(back.History.Events(), c.History.Events()) || back.History.Dropped() != c.History.Dropped() {
			t.Fatalf("%q: %d events read back as %d", data, c.History.Len(), back.History.Len())
		}
	})
}
