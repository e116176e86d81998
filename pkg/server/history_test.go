package server_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server"
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
