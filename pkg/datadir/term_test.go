package datadir

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/treecopy"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// poisonClusterd makes a clusterd member's directory and stores term 2^64-1 in its HardState,
// as a forged heartbeat left it before Step refused one.
func poisonClusterd(t *testing.T) string {
	t.Helper()
	initial, err := ParseInitialCluster("a=http://127.0.0.1:1,b=http://127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a")
	s, err := Create(dir, "a", NewCluster(initial, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	hs := &raftpb.HardState{Term: proto.Uint64(math.MaxUint64), Commit: proto.Uint64(st.HardState.GetCommit())}
	if err := s.Save(storage.Update{HardState: hs}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// poisonEtcd copies the real etcd 3.7.1 directory and appends a HardState of term 2^64-1 to its
// WAL, as etcd writes the one a forged heartbeat gives it.
func poisonEtcd(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "e2")
	if err := treecopy.Copy(etcdDir, dir); err != nil {
		t.Fatal(err)
	}
	w, err := readWAL(filepath.Join(dir, etcdWALDir))
	if err != nil {
		t.Fatal(err)
	}
	hs := &raftpb.HardState{Term: proto.Uint64(math.MaxUint64), Commit: proto.Uint64(w.HardState.GetCommit())}
	if err := appendWALState(w, hs); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A term past 2^63 is found by check, naming the member and the command that recovers it;
// reset-term sets the log's highest term plus 2^31 with the log and commit kept, copies the
// file first, leaves a directory check finds sound, and refuses to reset it again.
func TestResetTerm(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		poison func(*testing.T) string
		where  string
	}{
		{KindClusterd, poisonClusterd, "the HardState"},
		{KindEtcd, poisonEtcd, "the WAL's HardState"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			dir := tc.poison(t)
			before, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.where + " holds term 18446744073709551615, past any term a cluster reaches (2^63): raft panics at its next election; recover with clusterctl datadir reset-term " + dir
			if len(r.Problems) != 1 || r.Problems[0].MemberID != before.MemberID || r.Problems[0].Text != want {
				t.Fatalf("check: %+v\nwant %q", r.Problems, want)
			}
			res, err := ResetTerm(dir)
			if err != nil {
				t.Fatal(err)
			}
			if res.From != math.MaxUint64 || res.LogTerm == 0 || res.To != res.LogTerm+storage.MaxTermStep/2 || res.MemberID != before.MemberID {
				t.Errorf("reset: %+v", res)
			}
			if _, err := os.Stat(res.Backup); err != nil || !strings.HasPrefix(res.Backup, dir+".before-reset-term.") {
				t.Errorf("backup %q: %v", res.Backup, err)
			}
			after, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if after.Term != res.To || after.CommitIndex != before.CommitIndex || after.LastIndex != before.LastIndex ||
				len(after.Cluster.Members) != len(before.Cluster.Members) || !after.Check.Sound() {
				t.Errorf("after the reset: %+v, check %+v\nbefore: %+v", after, after.Check.Problems, before)
			}
			if _, err := ResetTerm(dir); !errors.Is(err, ErrTermSound) {
				t.Errorf("a second reset: %v, want ErrTermSound", err)
			}
		})
	}
}

// datadir status does not name a directory of an absurd term to restart from, and says why.
func TestRankExcludesAbsurdTerm(t *testing.T) {
	st, err := ReadDir(poisonClusterd(t))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Rank([]*DirStatus{st}, StepOptions{})
	var none *NoRestartError
	if !errors.As(err, &none) || rec.Chosen != nil || !strings.Contains(err.Error(), "its raft term is past 2^63") {
		t.Fatalf("Rank: %+v, %v", rec, err)
	}
}
