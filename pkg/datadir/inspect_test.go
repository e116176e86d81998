package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/internal/testkit/treecopy"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// etcdDir is a real etcd 3.7.1 data directory, made small: one member (e2) started with
// --snapshot-count=8, a learner added (never started), twelve keys put, stopped with SIGTERM;
// its database copied with bbolt's WriteTo (the pages in use), its WAL cut at the first zero
// length (etcd preallocates 64 MB of zeros), its snap file as etcd wrote it.
const etcdDir = "testdata/etcd-3.7.1-dir"

const etcdWALFile = etcdDir + "/member/wal/0000000000000000-0000000000000000.wal"

func TestReadEtcdDir(t *testing.T) {
	st, err := ReadDir(etcdDir)
	if err != nil {
		t.Fatal(err)
	}
	want := DirStatus{Dir: etcdDir, Kind: KindEtcd, MemberID: 0xca9cf1dbe2fb80f1, ClusterID: 0x1a8636d1301857d5, Name: "e2",
		Term: 2, LastIndex: 17, CommitIndex: 17, CommitTerm: 2, AppliedIndex: 17}
	got := *st
	got.Cluster, got.Check = nil, nil
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if v, l := st.Cluster.Voters(), st.Cluster.Learners(); len(v) != 1 || v[0] != st.MemberID || len(l) != 1 || st.Cluster.Removed.Len() != 0 {
		t.Errorf("membership: voters %v learners %v", v, l)
	}
	if !st.Check.Sound() || len(st.Check.Compared) != 3 {
		t.Errorf("check: %+v", st.Check)
	}
}

// A clusterd data directory as Create writes it, read without writing: its status, a sound
// check, and the same directory's files untouched.
func TestReadClusterdDir(t *testing.T) {
	initial, err := ParseInitialCluster("a=http://127.0.0.1:1,b=http://127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCluster(initial, "t")
	dir := filepath.Join(t.TempDir(), "a")
	s, err := Create(dir, "a", c)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := listing(t, dir)
	st, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != KindClusterd || st.ClusterID != c.ID || st.Name != "a" || st.CommitIndex != 1 || st.CommitTerm != 1 ||
		st.AppliedIndex != 1 || len(st.Cluster.Members) != 2 || st.Tombstone || !st.Check.Sound() {
		t.Errorf("%+v %+v", st, st.Check)
	}
	if after := listing(t, dir); after != before {
		t.Errorf("reading changed the directory:\n%s\n%s", before, after)
	}
	rec, err := Rank([]*DirStatus{st}, StepOptions{})
	if err != nil || rec.Chosen != st || len(rec.Steps) != 4 {
		t.Errorf("rank: %+v %v", rec, err)
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		}
		return err
	})
	return b.String()
}

// Every path that is not a stopped member's readable data directory is refused in one line of
// the right type.
func TestReadDirRefuses(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	damaged := filepath.Join(tmp, "damaged")
	os.MkdirAll(damaged, 0o700)
	os.WriteFile(filepath.Join(damaged, storage.FileName), []byte("not a database"), 0o600)
	for _, p := range []string{filepath.Join(tmp, "missing"), file, tmp} {
		if _, err := ReadDir(p); !errors.As(err, new(*NotDataDirError)) {
			t.Errorf("%s: %v", p, err)
		}
	}
	_, err := ReadDir(damaged)
	if !errors.As(err, new(*DamagedError)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("damaged: %v", err)
	}
	// A WAL cut in the middle of a file that is not the last is damage; in the last, a torn write.
	etcd := copyTree(t, etcdDir)
	wal, _ := os.ReadFile(etcdWALFile)
	walDir := filepath.Join(etcd, "member", "wal")
	os.WriteFile(filepath.Join(walDir, "0000000000000000-0000000000000000.wal"), wal[:len(wal)-7], 0o600)
	if w, err := readWAL(walDir); err != nil || !w.TornTail || w.NodeID != 0xca9cf1dbe2fb80f1 {
		t.Errorf("torn tail: %v %+v", err, w)
	}
	if _, err := ReadDir(etcd); err != nil {
		t.Errorf("torn tail: %v", err)
	}
	os.WriteFile(filepath.Join(walDir, "0000000000000001-0000000000000012.wal"), wal[:64], 0o600)
	if _, err := ReadDir(etcd); !errors.As(err, new(*WALError)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("damaged WAL: %v", err)
	}
}

// A data directory whose database a running member holds for writing is refused as in use.
func TestReadDirInUse(t *testing.T) {
	dir := copyTree(t, etcdDir)
	db, err := bolt.Open(filepath.Join(dir, etcdBackendPath), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := ReadDir(dir); !errors.As(err, new(*InUseError)) {
		t.Errorf("got %v", err)
	}
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := treecopy.Copy(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// The ranking: the most advanced committed log among the directories that can be restarted
// from; a learner's, a removed member's and an unsound one left out; different clusters refused.
func TestRank(t *testing.T) {
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a:2380"}, ClientURLs: []string{"http://a:2379"}},
		{ID: 2, Name: "b", PeerURLs: []string{"http://b:2380"}},
		{ID: 3, Name: "c", PeerURLs: []string{"http://c:2380"}, IsLearner: true},
	})
	dir := func(id membership.ID, term, commit uint64) *DirStatus {
		return &DirStatus{Dir: "/d/" + c.Members[id].Name, Kind: KindClusterd, MemberID: id, ClusterID: 9, Name: c.Members[id].Name,
			CommitTerm: term, CommitIndex: commit, Cluster: c, Check: &CheckResult{}}
	}
	a, b, learner := dir(1, 2, 50), dir(2, 3, 40), dir(3, 3, 90)
	rec, err := Rank([]*DirStatus{a, b, learner}, StepOptions{})
	if err != nil || rec.Chosen != b {
		t.Fatalf("%+v %v", rec, err)
	}
	if !strings.Contains(rec.Reason, "/d/c is left out: it is a learner's") {
		t.Errorf("reason %q", rec.Reason)
	}
	b.Tombstone = true
	if rec, _ := Rank([]*DirStatus{a, b}, StepOptions{}); rec.Chosen != a {
		t.Errorf("a removed member's directory chosen: %+v", rec)
	}
	a.Check = &CheckResult{Problems: []Problem{{MemberID: 1, Text: "x"}}}
	if _, err := Rank([]*DirStatus{a, b}, StepOptions{}); !errors.As(err, new(*NoRestartError)) {
		t.Errorf("none can be restarted from: %v", err)
	}
	other := dir(2, 3, 40)
	other.ClusterID = 8
	if _, err := Rank([]*DirStatus{dir(1, 1, 1), other}, StepOptions{}); !errors.As(err, new(*DifferentClustersError)) {
		t.Errorf("different clusters: %v", err)
	}
}

// The check's rules, each naming the member and both sides.
func TestCheckRules(t *testing.T) {
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a:2380"}},
		{ID: 2, Name: "a"},
		{ID: 3, Name: "c", PeerURLs: []string{"http://c:2380"}, IsLearner: true},
	})
	c.Removed = membership.NewIDSet(3)
	r := &CheckResult{}
	r.rules("the members bucket", c)
	r.compare("the members bucket", storage.ConfState(c), "raft", &raftpb.ConfState{Voters: []uint64{1, 2}})
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`member 0000000000000002: the members bucket gives it no peer URLs`,
		`member 0000000000000003: the members bucket lists it as a member, the removed IDs list it as removed`,
		`member 0000000000000001: the members bucket names it "a", as it names 0000000000000002`,
		`member 0000000000000002: the members bucket names it "a", as it names 0000000000000001`,
		`member 0000000000000003: the members bucket says learner, raft says no such member`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
