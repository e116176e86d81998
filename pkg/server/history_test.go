package server_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/oldformat"
	"github.com/clusterctl/clusterctl/internal/servertest"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/storage"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// historyOf reads m's membership history through the client clusterctl uses.
func historyOf(t *testing.T, m *servertest.Member, q client.HistoryQuery) (*client.HistoryResult, error) {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: []string{m.ClientAddr()}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.MemberHistory(ctx, q)
}

// waitPublished waits until the history m reads (linearizable) holds n publishes: the members
// of a new cluster have started, and nothing of theirs is left to record.
func waitPublished(t *testing.T, m *servertest.Member, n int) {
	t.Helper()
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		r, err := historyOf(t, m, client.HistoryQuery{Linearizable: true})
		if err != nil {
			return err
		}
		got := 0
		for _, e := range r.Events {
			if e.Change == "publish" {
				got++
			}
		}
		if got != n {
			return fmt.Errorf("%d publishes recorded, want %d", got, n)
		}
		return nil
	})
}

// sameHistory waits until every member's own copy (serializable) is want.
func sameHistory(t *testing.T, ms []*servertest.Member, want []membership.Event) {
	t.Helper()
	for _, m := range ms {
		servertest.Eventually(t, servertest.WaitTimeout, func() error {
			r, err := historyOf(t, m, client.HistoryQuery{})
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(r.Events, want) {
				return fmt.Errorf("%s holds %d events %+v, want %d %+v", m.Name, len(r.Events), r.Events, len(want), want)
			}
			return nil
		})
	}
}

// Every change is recorded with its index, the leader's time and who asked, identically on every
// member: one that joins from a snapshot after more than --snapshot-count changes included, and
// after a restart of every member.
func TestHistoryEveryMemberSame(t *testing.T) {
	start := time.Now().Add(-time.Second)
	ms := servertest.Start(t, 3, func(c *server.Config) { c.SnapshotCount = 4; c.MaxLearners = 10 })
	c := ms[0].Client(t)
	// The three publishes of the bootstrap, then changes beyond the snapshot count.
	waitPublished(t, ms[0], 3)
	l, added, initial := addMember(t, c, "l0", true)
	l.Start(t, l.Config(initial, "existing", nil))
	waitPublished(t, ms[0], 4)
	ctx, cancel := ctxWithName("")
	defer cancel()
	var err error
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		_, err = c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: added.Member.ID})
		return err
	})
	for range 3 {
		u := "http://" + servertest.FreeAddr(t) // not a fixed port, which may be a member's
		r, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{u}, IsLearner: true})
		if err != nil {
			t.Fatal(err)
		}
		via := metadata.AppendToOutgoingContext(ctx, wire.MDVia, wire.ViaMemberPrune)
		if _, err := c.MemberRemove(via, &pb.MemberRemoveRequest{ID: r.Member.ID}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := historyOf(t, ms[1], client.HistoryQuery{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := r.Events
	var changes []string
	for _, e := range ev {
		changes = append(changes, e.Change)
		if e.Time.Before(start) || e.Time.After(time.Now()) || e.RaftIndex == 0 || e.Term == 0 {
			t.Errorf("event %+v: time or position out of range", e)
		}
	}
	want := "publish publish publish add-learner publish promote add-learner remove add-learner remove add-learner remove"
	if strings.Join(changes, " ") != want {
		t.Fatalf("changes %v, want %s", changes, want)
	}
	if ev[3].Name != "l0" || ev[3].MemberID != membership.ID(added.Member.ID) || !ev[3].IsLearner || ev[5].IsLearner {
		t.Errorf("the learner's events: %+v, %+v", ev[3], ev[5])
	}
	if ev[0].By.String() != "clusterd=publish" || !strings.HasPrefix(ev[3].By.Address, "127.0.0.1:") || ev[3].By.CN != "" || ev[3].By.Via != "" {
		t.Errorf("origins: %q, %q", ev[0].By, ev[3].By)
	}
	if ev[7].By.Via != wire.ViaMemberPrune || ev[7].Name != "" || len(ev[7].PeerURLs) != 1 {
		t.Errorf("removal marked by member prune: %+v", ev[7])
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].RaftIndex <= ev[i-1].RaftIndex {
			t.Fatalf("events out of order: %d then %d", ev[i-1].RaftIndex, ev[i].RaftIndex)
		}
	}
	// A member added now joins from a snapshot: the log before it is compacted.
	late, _, initial := addMember(t, c, "late", false)
	late.Start(t, late.Config(initial, "existing", nil))
	all := append(append([]*servertest.Member{}, ms...), l, late)
	waitPublished(t, ms[0], 5)
	full, err := historyOf(t, ms[0], client.HistoryQuery{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Events) != len(ev)+2 {
		t.Fatalf("after the late member joined: %d events, want %d", len(full.Events), len(ev)+2)
	}
	sameHistory(t, all, full.Events)
	// Every member restarted: the same history, nothing recorded twice.
	for _, m := range all {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range all {
		m.Start(t, m.Config("ignored=http://127.0.0.1:1", "existing", func(c *server.Config) { c.SnapshotCount = 4 }))
	}
	servertest.WaitMembers(t, ms[0], 5, true)
	sameHistory(t, all, full.Events)

	// The selections: one member by name or ID, since a time, the newest N.
	byName, err := historyOf(t, ms[2], client.HistoryQuery{Member: "l0"})
	if err != nil || len(byName.Events) != 3 {
		t.Fatalf("--member l0: %v, %+v", err, byName)
	}
	byID, err := historyOf(t, ms[2], client.HistoryQuery{Member: fmt.Sprintf("%x", added.Member.ID)})
	if err != nil || !reflect.DeepEqual(byID.Events, byName.Events) {
		t.Fatalf("--member by ID: %v, %+v", err, byID)
	}
	since, err := historyOf(t, ms[2], client.HistoryQuery{Since: full.Events[5].Time, Limit: 2})
	if err != nil || len(since.Events) != 2 || !reflect.DeepEqual(since.Events, full.Events[len(full.Events)-2:]) {
		t.Fatalf("--since --limit 2: %v, %+v", err, since)
	}
}

// A member restarted with a smaller --max-history keeps the newest events and counts the rest
// as dropped; the count goes on growing with every change.
func TestHistoryBounded(t *testing.T) {
	ms := servertest.Start(t, 1, func(c *server.Config) { c.MaxHistory = 2; c.MaxLearners = 2 })
	waitPublished(t, ms[0], 1)
	addMember(t, ms[0].Client(t), "a", true)
	r, err := historyOf(t, ms[0], client.HistoryQuery{Linearizable: true})
	if err != nil || len(r.Events) != 2 || r.Dropped != 0 || r.Events[1].Change != "add-learner" {
		t.Fatalf("%v, %+v", err, r)
	}
	if err := ms[0].Stop(); err != nil {
		t.Fatal(err)
	}
	ms[0].Start(t, ms[0].Config("ignored=http://127.0.0.1:1", "existing", func(c *server.Config) { c.MaxHistory = 1; c.MaxLearners = 2 }))
	servertest.WaitMembers(t, ms[0], 2, true)
	addMember(t, ms[0].Client(t), "b", true)
	r, err = historyOf(t, ms[0], client.HistoryQuery{Linearizable: true})
	if err != nil || len(r.Events) != 1 || r.Dropped != 2 || r.Events[0].Name != "b" {
		t.Fatalf("after the restart with --max-history 1: %v, %+v", err, r)
	}
}

func oldEntry(t *testing.T, index, term uint64, ch membership.Change, typ raftpb.ConfChangeType) *raftpb.Entry {
	t.Helper()
	e, err := oldformat.ConfChangeEntry(index, term, ch, typ)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// An older member's log, entries without the new fields and a file without the history bucket,
// replayed by this version: the changes are recorded, without a time or an origin.
func TestHistoryOlderLogReplayed(t *testing.T) {
	m := servertest.NewMember(t, "m0")
	c := datadir.NewCluster([]datadir.Initial{{Name: "m0", URLs: []string{m.PeerURL}}}, servertest.Token)
	st, err := datadir.Create(m.Dir, "m0", c)
	if err != nil {
		t.Fatal(err)
	}
	add := membership.Change{Kind: membership.KindAdd, Member: membership.Member{ID: 77, Name: "old", PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true}}
	entries := []*raftpb.Entry{
		oldEntry(t, 2, 2, add, raftpb.ConfChangeType_ConfChangeAddLearnerNode),
		oldEntry(t, 3, 2, membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 77}}, raftpb.ConfChangeType_ConfChangeRemoveNode),
	}
	hs := &raftpb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(3)}
	if err := st.Save(storage.Update{HardState: hs, Entries: entries}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := oldformat.DropHistory(m.Dir); err != nil {
		t.Fatal(err)
	}
	m.Start(t, m.Config("m0="+m.PeerURL, "existing", nil))
	servertest.WaitMembers(t, m, 1, true)
	r, err := historyOf(t, m, client.HistoryQuery{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) < 2 {
		t.Fatalf("replayed: %+v", r.Events)
	}
	for i, want := range []string{"add-learner", "remove"} {
		e := r.Events[i]
		if e.Change != want || e.MemberID != 77 || e.Name != "old" || !e.Time.IsZero() || !e.By.IsZero() || e.RaftIndex != uint64(i+2) {
			t.Errorf("event %d: %+v", i, e)
		}
	}
}

// --force-new-cluster keeps the history and records each removal it makes as clusterd's own.
func TestHistoryForceNewCluster(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	waitPublished(t, ms[0], 3)
	addMember(t, ms[0].Client(t), "l0", true)
	before, err := historyOf(t, ms[0], client.HistoryQuery{Linearizable: true})
	if err != nil {
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
	after, err := historyOf(t, survivor, client.HistoryQuery{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Events) != len(before.Events)+3 || !reflect.DeepEqual(after.Events[:len(before.Events)], before.Events) {
		t.Fatalf("before %+v, after %+v", before.Events, after.Events)
	}
	for _, e := range after.Events[len(before.Events):] {
		if e.Change != "remove" || e.By.String() != "clusterd=force-new-cluster" || e.Time.IsZero() {
			t.Errorf("forced removal recorded as %+v", e)
		}
	}
}

// A history whose compressed records are damaged (kept as a snapshot brought them, inflated only
// when read) never stops the member: it starts, records and answers the rest, and member
// history is refused in one line saying what is wrong, as datadir check reports it.
func TestHistoryDamagedRefusedWhenRead(t *testing.T) {
	m := servertest.NewMember(t, "m0")
	c := datadir.NewCluster([]datadir.Initial{{Name: "m0", URLs: []string{m.PeerURL}}}, servertest.Token)
	var h membership.History
	for i := range 1000 {
		h = h.With(membership.Event{RaftIndex: uint64(i + 1), Change: "update", MemberID: 7, PeerURLs: []string{fmt.Sprint("http://a:", i%3)}}, 0)
	}
	deflated, events, dropped := h.AppendDeflated(nil)
	// In the first block, which is compressed (the newest events are stored as they are).
	blocks, _ := h.DeflatedBlocks()
	deflated[len(blocks[0].Deflated)/2] ^= 0x5a
	var err error
	if c.History, err = membership.HistoryFromDeflated(deflated, events, dropped); err != nil {
		t.Fatal(err)
	}
	st, err := datadir.Create(m.Dir, "m0", c)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if r, err := datadir.Check(m.Dir); err != nil || r.Sound() {
		t.Fatalf("datadir check of a damaged history: %v, %+v", err, r)
	}
	m.Start(t, m.Config("m0="+m.PeerURL, "existing", nil))
	servertest.WaitMembers(t, m, 1, true)
	addMember(t, m.Client(t), "a", true)
	for _, lin := range []bool{true, false} {
		_, err := historyOf(t, m, client.HistoryQuery{Linearizable: lin})
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "membership history damaged") {
			t.Fatalf("member history of a damaged history: %v", err)
		}
	}
	servertest.WaitMembers(t, m, 2, true)
}
