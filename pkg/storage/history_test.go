package storage

import (
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

func TestHistorySaveLoad(t *testing.T) {
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	load := func() membership.History {
		t.Helper()
		st, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		return st.Cluster.History
	}
	// Three passes, the bound at 4: the history on disk is always what the Cluster holds.
	index := uint64(1)
	for pass, n := range []int{2, 1, 3} {
		for range n {
			index++
			ch := membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 1, PeerURLs: []string{"http://a:1"}}}
			if c, err = c.ApplyRecorded(ch, membership.Stamp{Index: index, Term: 2}, 4); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Save(Update{Cluster: c, Applied: index, HistoryAdded: n}); err != nil {
			t.Fatal(err)
		}
		if got := load(); !reflect.DeepEqual(got.Events(), c.History.Events()) || got.Dropped() != c.History.Dropped() {
			t.Fatalf("pass %d: loaded %+v (%d dropped), want %+v (%d dropped)", pass, got.Events(), got.Dropped(), c.History.Events(), c.History.Dropped())
		}
	}
	if c.History.Dropped() != 2 {
		t.Fatalf("dropped %d, want 2", c.History.Dropped())
	}
	// A snapshot from the leader replaces the whole history.
	leader := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	leader.History = membership.NewHistory([]membership.Event{{RaftIndex: 40, Change: "add"}}, 7, 0)
	data, err := SnapshotData(leader)
	if err != nil {
		t.Fatal(err)
	}
	received := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(40), Term: proto.Uint64(2), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	if err := s.Save(Update{ResetLog: true, Snapshot: received, Cluster: leader, Applied: 40}); err != nil {
		t.Fatal(err)
	}
	if got := load(); got.Len() != 1 || got.Events()[0].RaftIndex != 40 || got.Dropped() != 7 {
		t.Fatalf("after a snapshot: %+v, %d dropped", got.Events(), got.Dropped())
	}
	// The same pass written twice leaves one copy of each event: keys are sequence numbers.
	c2, err := leader.ApplyRecorded(membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 1, PeerURLs: []string{"http://a:2"}}}, membership.Stamp{Index: 41}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Save(Update{Cluster: c2, Applied: 41, HistoryAdded: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got := load(); got.Len() != c2.History.Len() {
		t.Fatalf("written twice: %d events, want %d", got.Len(), c2.History.Len())
	}
	// A snapshot taken now holds the events the bucket holds: the bucket starts again empty.
	data, err = SnapshotData(c2)
	if err != nil {
		t.Fatal(err)
	}
	taken := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(41), Term: proto.Uint64(2)}}
	if err := s.Save(Update{Snapshot: taken}); err != nil {
		t.Fatal(err)
	}
	if got := load(); !reflect.DeepEqual(got.Events(), c2.History.Events()) || got.Dropped() != 7 {
		t.Fatalf("after a snapshot of its own: %+v, %d dropped", got.Events(), got.Dropped())
	}
	if n := bucketKeys(t, s, bucketHistory); n != 0 {
		t.Fatalf("after a snapshot of its own the bucket holds %d events, want none", n)
	}
	// The next change makes the bucket again, with its event alone.
	c3, err := c2.ApplyRecorded(membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 1, PeerURLs: []string{"http://a:3"}}}, membership.Stamp{Index: 42}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Update{Cluster: c3, Applied: 42, HistoryAdded: 1}); err != nil {
		t.Fatal(err)
	}
	if got := load(); !reflect.DeepEqual(got.Events(), c3.History.Events()) || got.Dropped() != 7 || bucketKeys(t, s, bucketHistory) != 1 {
		t.Fatalf("a change after the snapshot: %+v, %d dropped, %d in the bucket", got.Events(), got.Dropped(), bucketKeys(t, s, bucketHistory))
	}
	// A stored snapshot whose data does not decode holds no event: those the bucket holds are
	// read as the newest, the rest counted as dropped, so that the next event is numbered after
	// the last one recorded.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return putProto(tx.Bucket(bucketMeta), keySnapshot, &raftpb.Snapshot{Data: []byte("damaged"), Metadata: taken.GetMetadata()})
	}); err != nil {
		t.Fatal(err)
	}
	if got := load(); got.Total() != c3.History.Total() || !reflect.DeepEqual(got.Events(), c3.History.Newest(1)) {
		t.Fatalf("a damaged stored snapshot: %d events of %d recorded, want the newest, %d", got.Len(), got.Total(), c3.History.Total())
	}
}

// bucketKeys counts the keys of one of s's buckets; a missing bucket holds none.
func bucketKeys(t *testing.T, s *Store, name []byte) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A file without the history bucket (as after a snapshot, until the next change) loads with the
// snapshot's history, and the first change recorded makes the bucket.
func TestHistoryNoBucket(t *testing.T) {
	dir := t.TempDir()
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}, {ID: 2, Name: "b", PeerURLs: []string{"http://b:1"}}})
	snap := &raftpb.Snapshot{Data: []byte("{}"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}}}}
	s, err := Create(dir, Identity{MemberID: 1, ClusterID: 9, Name: "a"}, snap, &raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketHistory) }); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil || st.Cluster.History.Len() != 0 {
		t.Fatalf("no bucket: %v, %d events", err, st.Cluster.History.Len())
	}
	next, err := st.Cluster.ApplyRecorded(membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: 2}}, membership.Stamp{Index: 2, Term: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Update{Cluster: next, Removed: []membership.ID{2}, Applied: 2, HistoryAdded: 1}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(); st.Cluster.History.Len() != 1 || st.Cluster.History.Events()[0].Name != "b" {
		t.Fatalf("after a change: %+v", st.Cluster.History.Events())
	}
}
