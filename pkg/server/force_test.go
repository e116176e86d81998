package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/storage"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A cluster that lost its majority restarts from one survivor's data, grows back one member
// at a time, and the old members are refused when they come back; an old member does not take
// the forced member's word that it is removed (the others it knew do not confirm it), so its
// data survives.
func TestForceNewCluster(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	ctx, cancel := ctxWithName("l0")
	defer cancel()
	if _, err := ms[0].Client(t).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true}); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	survivor := ms[0]
	survivor.Start(t, survivor.Config("x=http://127.0.0.1:1", "new", func(c *server.Config) { c.ForceNewCluster = true }))
	servertest.WaitMembers(t, survivor, 1, true)
	// Restarting without the flag keeps the one-member cluster.
	if err := survivor.Stop(); err != nil {
		t.Fatal(err)
	}
	survivor.Start(t, survivor.Config("x=http://127.0.0.1:1", "existing", nil))
	servertest.WaitMembers(t, survivor, 1, true)
	// Grow back: a voter added to a one-voter cluster is accepted.
	n, _, initial := addMember(t, survivor.Client(t), "fresh", false)
	n.Start(t, n.Config(initial, "existing", nil))
	servertest.WaitMembers(t, n, 2, true)
	// An old member started on its data is refused, is told it was removed, asks the voters it
	// knew, is not confirmed, and says so; it keeps its data.
	old := ms[1]
	logs := &servertest.LogBuffer{}
	old.Start(t, old.Config("x=http://127.0.0.1:1", "existing", func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) }))
	servertest.Eventually(t, 15*time.Second, func() error {
		if !strings.Contains(logs.String(), forcedOutLine) {
			return errors.New("the old member did not log the forced removal")
		}
		return nil
	})
	if err := old.Stop(); err != nil {
		t.Fatalf("old member: %v", err)
	}
	if st := load(t, old.Dir); st.Removed {
		t.Fatal("the old member wrote a tombstone on the forced member's word")
	}
	servertest.WaitMembers(t, n, 2, true)
}

// forcedOutLine begins what an old member logs when a voter it knows answers that
// --force-new-cluster removed it and the majority does not confirm it.
const forcedOutLine = "a voter of this member's cluster says --force-new-cluster removed this member, and a majority of the cluster's voters does not confirm it"

// load reads a stopped member's stored state.
func load(t *testing.T, dir string) *storage.State {
	t.Helper()
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func TestForceNewClusterRefusals(t *testing.T) {
	m := servertest.NewMember(t, "m0")
	srv, err := server.New(m.Config("m0="+m.PeerURL, "new", func(c *server.Config) { c.ForceNewCluster = true }))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "holds no member") {
		t.Fatalf("empty data dir: %v", err)
	}
	if _, err := os.Stat(m.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start wrote %s", m.Dir)
	}

	// A removed member's data (tombstone) and a learner's data are refused too.
	c := datadir.NewCluster([]datadir.Initial{{Name: "m0", URLs: []string{m.PeerURL}}, {Name: "l", URLs: []string{"http://127.0.0.1:1"}}}, "test")
	for id, mm := range c.Members {
		if mm.Name == "l" {
			c.Members[id].IsLearner = true
		}
	}
	for _, tc := range []struct{ name, want string }{{"m0", "was removed from its cluster"}, {"l", "is a learner"}} {
		dir := filepath.Join(t.TempDir(), tc.name)
		st, err := datadir.Create(dir, tc.name, c)
		if err != nil {
			t.Fatal(err)
		}
		if tc.name == "m0" {
			if err := st.Save(storage.Update{Tombstone: true}); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		cfg := m.Config("m0="+m.PeerURL, "new", func(c *server.Config) { c.ForceNewCluster = true; c.DataDir = dir; c.Name = tc.name })
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Run(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}

func TestRestartRefusals(t *testing.T) {
	ms := servertest.Start(t, 1, nil)
	m := ms[0]
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(m.Config("m0=http://127.0.0.1:1", "new", func(c *server.Config) { c.InitialClusterGiven = true }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := srv.Run(ctx); err == nil || !strings.HasSuffix(err.Error(), "has already been bootstrapped") {
		t.Fatalf("new cluster on another's data: %v", err)
	}
	// Without a --initial-cluster of its own the flags' defaults are not compared: it restarts.
	m.Start(t, m.Config("default=http://127.0.0.1:2380", "new", nil))
	servertest.WaitMembers(t, m, 1, true)
}

// A removal committed but not yet applied when the majority was lost, and proposed in an earlier
// term than the one it was appended in, is never applied (raftnode: a stale proposal). Forcing a
// new cluster must not count it when it decides whom to remove, or the removed member would stay a
// voter of the new cluster, which could then never elect a leader.
func TestForceNewClusterSkipsStaleRemoval(t *testing.T) {
	ms := []*servertest.Member{servertest.NewMember(t, "m0"), servertest.NewMember(t, "m1"), servertest.NewMember(t, "m2")}
	var initial []datadir.Initial
	for _, m := range ms {
		initial = append(initial, datadir.Initial{Name: m.Name, URLs: []string{m.PeerURL}})
	}
	c := datadir.NewCluster(initial, "test")
	var victim membership.ID
	for id, m := range c.Members {
		if m.Name == "m1" {
			victim = id
		}
	}
	st, err := datadir.Create(ms[0].Dir, "m0", c)
	if err != nil {
		t.Fatal(err)
	}
	// The proposal as stored in the log: what raftnode writes for a removal checked in term 2;
	// the entry holding it was appended in term 3.
	prop, err := proto.Marshal(&cpb.Proposal{RequestId: 7, Term: 2,
		Change: wire.ChangeToProto(membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: victim}})})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeType_ConfChangeRemoveNode.Enum(),
		NodeId: proto.Uint64(uint64(victim)), Context: prop})
	if err != nil {
		t.Fatal(err)
	}
	stale := &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(2), Term: proto.Uint64(3), Data: cc}
	hs := &raftpb.HardState{Term: proto.Uint64(3), Commit: proto.Uint64(2)}
	if err := st.Save(storage.Update{HardState: hs, Entries: []*raftpb.Entry{stale}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	m := ms[0]
	m.Start(t, m.Config("m0="+m.PeerURL, "new", func(c *server.Config) { c.ForceNewCluster = true }))
	// Only a one-voter cluster elects itself and answers a linearizable list.
	servertest.WaitMembers(t, m, 1, true)
}

// --force-new-cluster on a member of a healthy cluster is refused before anything is written:
// the two others run and have a leader, a quorum of three. The cluster stays as it was. With the
// override it goes ahead.
func TestForceNewClusterRefusedWhileQuorumLives(t *testing.T) {
	logs := map[string]*servertest.LogBuffer{"m0": {}, "m1": {}, "m2": {}}
	ms := servertest.Start(t, 3, func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(logs[c.Name], nil)) })
	m := ms[0]
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(m.Dir, storage.FileName)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(m.Config(servertest.InitialCluster(ms), "new", func(c *server.Config) { c.ForceNewCluster = true }))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Bounded: a start that is not refused would otherwise run until the test's end.
	rctx, rcancel := context.WithTimeout(t.Context(), 20*time.Second)
	err = srv.Run(rctx)
	rcancel()
	if err == nil || !strings.Contains(err.Error(), "--force-new-cluster: refused: 2 of the other voters (m1, m2) are running") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("force on a healthy cluster: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("refusal took %v", d)
	}
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Error("the refused start rewrote member.db")
	}
	// The member comes back as before, and the cluster still has three.
	m.Start(t, m.Config(servertest.InitialCluster(ms), "new", nil))
	servertest.WaitMembers(t, m, 3, true)

	// The override: the others are removed from the forced member's cluster, as the flag says,
	// but they do not take its word for it: they go on as the cluster they were, with a leader,
	// during the forced member's run and after it, and keep their data.
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Start(t, m.Config(servertest.InitialCluster(ms), "new", func(c *server.Config) {
		c.ForceNewCluster, c.ForceNewClusterBypassLiveCheck = true, true
	}))
	servertest.WaitMembers(t, m, 1, true)
	for _, other := range ms[1:] {
		servertest.Eventually(t, servertest.WaitTimeout, func() error {
			if !strings.Contains(logs[other.Name].String(), forcedOutLine) {
				return fmt.Errorf("%s did not log the unconfirmed removal", other.Name)
			}
			return nil
		})
		servertest.WaitMembers(t, other, 3, true)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, other := range ms[1:] {
		servertest.WaitMembers(t, other, 3, true)
	}
	for _, other := range ms[1:] {
		if err := other.Stop(); err != nil {
			t.Fatalf("%s: %v", other.Name, err)
		}
		if load(t, other.Dir).Removed {
			t.Fatalf("%s wrote a tombstone on the forced member's word", other.Name)
		}
	}
}

// With the other members dead, nothing answers and the forced start goes ahead promptly.
func TestForceNewClusterWithMajorityDead(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	for _, m := range ms {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ms[0].Start(t, ms[0].Config(servertest.InitialCluster(ms), "new", func(c *server.Config) { c.ForceNewCluster = true }))
	servertest.WaitMembers(t, ms[0], 1, true)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("forced start took %v", d)
	}
}

// Of two voters, one forced into a new cluster while the other runs: the forced member is the
// only other voter the other knows, but its removal was never in the other's log, so the other
// does not take its word, and keeps its data. A removal the two decided together still stops
// the removed member: its log holds the entry.
func TestForceNewClusterOfTwo(t *testing.T) {
	logs := map[string]*servertest.LogBuffer{"m0": {}, "m1": {}}
	ms := servertest.Start(t, 2, func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(logs[c.Name], nil)) })
	servertest.WaitMembers(t, ms[1], 2, true)
	m := ms[0]
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	m.Start(t, m.Config(servertest.InitialCluster(ms), "new", func(c *server.Config) {
		c.ForceNewCluster, c.ForceNewClusterBypassLiveCheck = true, true
	}))
	servertest.WaitMembers(t, m, 1, true)
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		if !strings.Contains(logs["m1"].String(), forcedOutLine) {
			return errors.New("m1 did not log the unconfirmed removal")
		}
		return nil
	})
	if err := ms[1].Stop(); err != nil {
		t.Fatalf("m1: %v", err)
	}
	if load(t, ms[1].Dir).Removed {
		t.Fatal("m1 wrote a tombstone on the forced member's word")
	}

	// A removal decided by both: the removed member's log holds it, and with the leader's word
	// that is a majority of the two.
	pair := servertest.Start(t, 2, nil)
	lead := leaderOf(t, pair)
	other := pair[0]
	if other == lead {
		other = pair[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := lead.Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: memberID(t, other)}); err != nil {
		t.Fatal(err)
	}
	if err := other.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
		t.Fatalf("removed member's Run: %v", err)
	}
	if !load(t, other.Dir).Removed {
		t.Fatal("the removed member wrote no tombstone")
	}
}
