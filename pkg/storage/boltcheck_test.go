package storage

import (
	"bytes"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// memberDB returns the bytes of a real member.db with n log entries of size bytes each: enough
// entries make the log bucket a tree of branch and leaf pages; the members bucket stays inline.
func memberDB(t testing.TB, n, size int) []byte {
	t.Helper()
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1)}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1)}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*raftpb.Entry
	for i := 2; i < n+2; i++ {
		entries = append(entries, &raftpb.Entry{Index: proto.Uint64(uint64(i)), Term: proto.Uint64(1), Data: make([]byte, size)})
	}
	if err := s.Save(Update{Entries: entries, Applied: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// boltFile is a test's view of a bbolt file's bytes, to damage them in one place.
type boltFile struct {
	t    *testing.T
	data []byte
	ps   int // page size
	// hwm is meta page 0's high-water mark: the pages in use, which a member.db's file (longer,
	// sparse) holds and more.
	hwm int
}

func newBoltFile(t *testing.T, data []byte) *boltFile {
	m, ok := readMeta(bytes.NewReader(data), 0)
	if !ok {
		t.Fatal("meta page 0 is not valid")
	}
	return &boltFile{t: t, data: data, ps: int(m.pageSize), hwm: int(m.hwm)}
}

// metas calls f on both meta pages' metas and sets their checksums again.
func (b *boltFile) metas(f func(m []byte)) {
	for _, off := range []int{0, b.ps} {
		m := b.data[off+pageHeaderSize : off+pageHeaderSize+metaSize]
		f(m)
		h := fnv.New64a()
		h.Write(m[:metaChecksumOff])
		ne.PutUint64(m[metaChecksumOff:], h.Sum64())
	}
}

func (b *boltFile) meta() boltMeta {
	m, err := chooseMeta(bytes.NewReader(b.data), int64(b.ps))
	if err != nil {
		b.t.Fatal(err)
	}
	return m
}

func (b *boltFile) page(id uint64) []byte { return b.data[int(id)*b.ps : int(id+1)*b.ps] }

// element returns element i of page p, and its data from its position on.
func element(p []byte, i int) (e, data []byte) {
	off := pageHeaderSize + i*elementSize
	e = p[off : off+elementSize]
	pos := ne.Uint32(e[4:]) // a leaf's; a branch's is at 0
	if ne.Uint16(p[8:]) == branchPageFlag {
		pos = ne.Uint32(e[0:])
	}
	return e, p[off+int(pos):]
}

// bucketValue returns the value of top-level bucket name, read from the root bucket's leaf page.
func (b *boltFile) bucketValue(name string) []byte {
	root := b.page(b.meta().root)
	for i := range int(ne.Uint16(root[10:])) {
		e, data := element(root, i)
		ks, vs := ne.Uint32(e[8:]), ne.Uint32(e[12:])
		if string(data[:ks]) == name {
			return data[ks : ks+vs]
		}
	}
	b.t.Fatalf("no bucket %s", name)
	return nil
}

// logRoot returns the log bucket's root page, a branch page in a database of many entries.
func (b *boltFile) logRoot() (uint64, []byte) {
	id := ne.Uint64(b.bucketValue("log"))
	p := b.page(id)
	if ne.Uint16(p[8:]) != branchPageFlag {
		b.t.Fatalf("the log bucket's root page %d is not a branch page", id)
	}
	return id, p
}

// Every damage CheckFile looks for is refused as a *CorruptError saying what it found, by Open
// and by ViewFile, and the file is left byte for byte as it was.
func TestCheckFileRefusesDamage(t *testing.T) {
	good := memberDB(t, 300, 100)
	tests := []struct {
		name   string
		damage func(b *boltFile)
		reason string
	}{
		{"truncated", func(b *boltFile) { b.data = b.data[:b.hwm*b.ps/2] }, "claims"},
		{"truncated to a page", func(b *boltFile) { b.data = b.data[:b.ps] }, "less than its two meta pages"},
		{"high-water mark beyond the file", func(b *boltFile) {
			b.metas(func(m []byte) { ne.PutUint64(m[40:], uint64(len(b.data)/b.ps+1)) })
		}, "claims"},
		{"both checksums wrong", func(b *boltFile) {
			b.data[pageHeaderSize+metaChecksumOff]++
			b.data[b.ps+pageHeaderSize+metaChecksumOff]++
		}, "no valid meta page"},
		{"page size not a power of two", func(b *boltFile) {
			b.metas(func(m []byte) { ne.PutUint32(m[8:], 5000) })
		}, "page size 5000"},
		{"branch beyond the high-water mark", func(b *boltFile) {
			_, p := b.logRoot()
			e, _ := element(p, 0)
			ne.PutUint64(e[8:], b.meta().hwm)
		}, "beyond the high-water mark"},
		{"header of another page", func(b *boltFile) {
			_, p := b.logRoot()
			e, _ := element(p, 1)
			ne.PutUint64(b.page(ne.Uint64(e[8:])), 12345)
		}, "says it is page 12345"},
		{"cycle", func(b *boltFile) {
			id, p := b.logRoot()
			e, _ := element(p, 1)
			ne.PutUint64(e[8:], id)
		}, "referenced twice"},
		{"leaf element past the page end", func(b *boltFile) {
			_, p := b.logRoot()
			e, _ := element(p, 0)
			leaf := b.page(ne.Uint64(e[8:]))
			le, _ := element(leaf, int(ne.Uint16(leaf[10:]))-1)
			ne.PutUint32(le[12:], uint32(b.ps))
		}, "ends past the page"},
		{"keys out of order", func(b *boltFile) {
			_, p := b.logRoot()
			e, _ := element(p, 0)
			leaf := b.page(ne.Uint64(e[8:]))
			_, key := element(leaf, 1)
			key[0] = 0xff
		}, "does not sort"},
		{"inline bucket overflowing its value", func(b *boltFile) {
			v := b.bucketValue("members")
			if ne.Uint64(v) != 0 {
				t.Fatal("the members bucket is not inline")
			}
			_, data := element(v[bucketHeaderSize:], 0)
			e, _ := element(v[bucketHeaderSize:], 0)
			ne.PutUint32(e[12:], uint32(len(data)))
		}, "inline bucket: element 0 ends past the page"},
		{"freelist beyond the file", func(b *boltFile) {
			b.metas(func(m []byte) { ne.PutUint64(m[32:], ne.Uint64(m[40:])) })
		}, "beyond the high-water mark"},
	}
	for _, tt := range tests {
		b := newBoltFile(t, bytes.Clone(good))
		tt.damage(b)
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, b.data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func() error{
			func() error { s, err := Open(dir); closeStore(s); return err },
			func() error { return ViewFile(path, func(*bolt.Tx) error { return nil }) },
		} {
			err := open()
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("%s: got %v, want a reason saying %q", tt.name, err, tt.reason)
			}
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, b.data) {
			t.Errorf("%s: the refused file was changed", tt.name)
		}
	}
}

func closeStore(s *Store) {
	if s != nil {
		s.Close()
	}
}

// Real databases pass: member.dbs small and large, and a snapshot etcd 3.7.1 took, whose page
// layout bbolt wrote with a synced free list.
func TestCheckFileAcceptsRealDatabases(t *testing.T) {
	files := map[string][]byte{"member.db": memberDB(t, 2, 10), "member.db of 3000 entries": memberDB(t, 3000, 200)}
	for _, p := range []string{"../datadir/testdata/etcd-3.7.1.db", "../datadir/testdata/clusterd.db"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = data[:len(data)-32] // a snapshot file ends with the SHA-256 of the database
	}
	for name, data := range files {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := CheckFile(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The input that made bbolt fault in the goroutine rebuilding its free list: a branch page
// pointing past the end of the file but inside the mapping. Now refused before bbolt opens it.
func TestCheckFileRefusesFreelistRebuildFault(t *testing.T) {
	corpus, err := os.ReadFile("testdata/fuzz/FuzzLoad/6b8c4b27924004e1")
	if err != nil {
		t.Fatal(err)
	}
	lit, ok := strings.CutPrefix(strings.TrimSpace(string(corpus)), "go test fuzz v1\n[]byte(")
	data, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if !ok || err != nil {
		t.Fatalf("corpus entry: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	closeStore(s)
	if !errors.As(err, new(*CorruptError)) {
		t.Fatalf("got %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != data {
		t.Error("the refused file was changed")
	}
}

// A member.db another process (here another open) holds is in use, not corrupt.
func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), memberDB(t, 2, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "is in use by another process") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkCheckFile checks a member.db of 1000 entries of 200 bytes, as clusterd's start-up
// does before opening it (figures in docs/benchmarks.md).
func BenchmarkCheckFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	data := memberDB(b, 1000, 200)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := CheckFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
