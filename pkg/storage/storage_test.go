package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

func entry(i, term uint64) *raftpb.Entry {
	return &raftpb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: []byte{byte(i)}}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}, {ID: 2, PeerURLs: []string{"http://b:1"}, IsLearner: true}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}, c, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Update{Entries: []*raftpb.Entry{entry(2, 2), entry(3, 2), entry(4, 2)}}); err != nil {
		t.Fatal(err)
	}
	// A leader overwrote index 3 on: 4 must go.
	next, _ := c.Apply(membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 2}})
	if err := s.Save(Update{Entries: []*raftpb.Entry{entry(3, 3)}, HardState: &raftpb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(3)}, Applied: 3, Cluster: next, Removed: []membership.ID{2}, Tombstone: true}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.MemberID != 1 || st.ClusterID != 9 || st.Name != "a" || !st.Removed || st.Applied != 3 || st.HardState.GetCommit() != 3 || len(st.JoinPeers.Members) != 2 {
		t.Fatalf("state: %+v", st)
	}
	if len(st.Entries) != 2 || st.Entries[1].GetTerm() != 3 {
		t.Fatalf("entries: %v", st.Entries)
	}
	if len(st.Cluster.Members) != 1 || !st.Cluster.IsRemoved(2) {
		t.Fatalf("cluster: %+v", st.Cluster)
	}
	if err := s.Save(Update{CompactTo: 3}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(); len(st.Entries) != 1 || st.Entries[0].GetIndex() != 3 {
		t.Fatalf("after compaction: %v", st.Entries)
	}
	// A received snapshot brings its whole removed set; otherwise only the IDs listed are added.
	fromLeader := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}, {ID: 3, PeerURLs: []string{"http://c:1"}}})
	fromLeader.Removed = membership.NewIDSet(5, 6)
	if err := s.Save(Update{ResetLog: true, Snapshot: snap, Cluster: fromLeader, Applied: 7}); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Load()
	if len(st.Entries) != 0 {
		t.Fatalf("a received snapshot replaces the log: %v", st.Entries)
	}
	if !st.Cluster.IsRemoved(2) || !st.Cluster.IsRemoved(5) || !st.Cluster.IsRemoved(6) {
		t.Fatalf("removed after a snapshot: %v", st.Cluster.Removed)
	}
	after, err := st.Cluster.Apply(membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Update{Cluster: after, Removed: []membership.ID{3}, Applied: 8}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(); st.Cluster.Removed.Len() != 4 || len(st.Cluster.Members) != 1 || !st.Cluster.IsRemoved(3) {
		t.Fatalf("removed after a removal: %v, members %v", st.Cluster.Removed, st.Cluster.Members)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(t.TempDir()); err != ErrNotBootstrapped {
		t.Fatal(err)
	}
}

// A database of a development build before the data format (no format key in meta) is refused
// by every reader, as a *FormatError saying so in one line, and nothing is written to it.
func TestOlderFormatRefused(t *testing.T) {
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, nil, &raftpb.HardState{}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyFormat) }); err != nil {
		t.Fatal(err)
	}
	_, loadErr := s.Load()
	s.Close()
	before, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	_, fileErr := LoadFile(dir)
	for _, err := range []error{loadErr, fileErr} {
		var fe *FormatError
		want := filepath.Join(dir, FileName) + " is in data format 0, of a development build before the first release; this version reads format 1 only"
		if !errors.As(err, &fe) || err.Error() != want {
			t.Fatalf("an older database: %T %v", err, err)
		}
	}
	if after, err := os.ReadFile(filepath.Join(dir, FileName)); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("LoadFile wrote to an older database (%v)", err)
	}
	if got := (&FormatError{Path: "m.db", Format: 2}).Error(); got != "m.db is in data format 2, of a later version; this version reads format 1 only" {
		t.Fatalf("a later format: %s", got)
	}
}

// A start killed while its database was being written leaves no member.db, only the temporary
// file, which the same start run again replaces (the chaos test found a member that could never
// start again: killed half-way through its first start, its member.db held no member).
func TestCreateKilledHalfWay(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName+".tmp"), []byte("half-written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if Exists(dir) {
		t.Fatal("a half-written database must not count as a member's")
	}
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	s.Close()
	if err != nil || st.MemberID != 1 || st.Name != "a" {
		t.Fatalf("after the second start: %+v, %v", st, err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 || filepath.Base(names[0]) != FileName {
		t.Fatalf("the data dir holds %v, want only %s", names, FileName)
	}
}

// A new member.db is initialSize long, so that a received snapshot does not grow it; its size, as
// a member's status reports it, is bbolt's pages in use and free, not the file's length.
func TestCreateSizes(t *testing.T) {
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, nil, &raftpb.HardState{}, c, c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != initialSize {
		t.Fatalf("new member.db is %d bytes long, want %d", fi.Size(), initialSize)
	}
	size, inUse := s.Size()
	if size <= 0 || size >= initialSize || inUse <= 0 || inUse > size {
		t.Fatalf("Size() = %d, %d: want 0 < in use <= size < %d", size, inUse, initialSize)
	}
	// A snapshot's worth of data commits into the file as it is.
	big := &raftpb.Snapshot{Data: make([]byte, 150<<10), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(5), Term: proto.Uint64(1)}}
	if err := s.Save(Update{Snapshot: big, ResetLog: true, Cluster: c, Applied: 5}); err != nil {
		t.Fatal(err)
	}
	if fi, err = os.Stat(path); err != nil || fi.Size() != initialSize {
		t.Fatalf("after a 150 KiB snapshot: %v, %v bytes; want the file as it was", err, fi.Size())
	}
	if grown, _ := s.Size(); grown < size+150<<10 {
		t.Fatalf("Size() after a 150 KiB snapshot = %d, want at least %d", grown, size+150<<10)
	}
	s.Close()
	if err := CheckFile(path); err != nil {
		t.Fatal(err)
	}
}
