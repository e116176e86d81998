package e2e

import (
	"regexp"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/oldformat"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// A data directory as a clusterd older than the history left it (its log's changes without
// the leader's time or who asked, no history bucket in member.db), started by this clusterd's
// binary: the changes are replayed into the history once, without a time or an origin, and a
// restart records nothing again.
func TestHistoryOlderDataDir(t *testing.T) {
	c := newCluster(t, t.TempDir(), nil)
	m, err := c.Alloc("infra0")
	if err != nil {
		t.Fatal(err)
	}
	initial := "infra0=" + m.PeerURL
	st, err := datadir.Create(m.DataDir, "infra0", datadir.NewCluster([]datadir.Initial{{Name: "infra0", URLs: []string{m.PeerURL}}}, "old"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []*raftpb.Entry
	for i, ch := range []struct {
		change membership.Change
		typ    raftpb.ConfChangeType
	}{
		{membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: 77, Name: "old", PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true}}, raftpb.ConfChangeType_ConfChangeAddLearnerNode},
		{membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 77}}, raftpb.ConfChangeType_ConfChangeRemoveNode},
	} {
		e, err := oldformat.ConfChangeEntry(uint64(i+2), 2, ch.change, ch.typ)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	err = st.Save(storage.Update{HardState: &raftpb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(3)}, Entries: entries})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := oldformat.DropHistory(m.DataDir); err != nil {
		t.Fatal(err)
	}
	args := append(m.BaseArgs(), "--initial-cluster="+initial, "--initial-cluster-state=existing", "--initial-cluster-token=old")
	replayed := regexp.MustCompile(`^-, 2, add-learner, 000000000000004d, old, -\n-, 3, remove, 000000000000004d, old, -\n[^\n]*, publish, [0-9a-f]{16}, infra0, clusterd=publish\n$`)
	for _, start := range []string{"first start", "restart after kill -9"} {
		if err := c.Start("infra0", args, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitStarted(tlsWait, "infra0"); err != nil {
			t.Fatal(err)
		}
		out, code := clusterctl(t, "--endpoints="+m.ClientAddr, "member", "history")
		if code != 0 || !replayed.MatchString(out) {
			t.Fatalf("%s: member history exited %d:\n%s", start, code, out)
		}
		if err := c.Kill("infra0"); err != nil {
			t.Fatal(err)
		}
	}
}
