package storage

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// roundTrip encodes c as a snapshot's data and decodes it again.
func roundTrip(t *testing.T, c *membership.Cluster) ([]byte, *membership.Cluster) {
	t.Helper()
	data, err := SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SnapshotCluster(&raftpb.Snapshot{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return data, got
}

func TestSnapshotRoundTrip(t *testing.T) {
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}},
		{ID: 2, PeerURLs: []string{"http://b:1"}, IsLearner: true},
		{ID: 3, Name: "c", PeerURLs: []string{"http://c:1"}, ClientURLs: []string{"http://c:2"}},
	})
	c.Removed = membership.NewIDSet(5, 6)
	_, got := roundTrip(t, c)
	if !reflect.DeepEqual(got.Members, c.Members) || got.ID != c.ID {
		t.Errorf("decoded %+v, want %+v", got, c)
	}
	if r := slices.Sorted(got.Removed.All()); !slices.Equal(r, []membership.ID{5, 6}) {
		t.Errorf("removed IDs %v, want [5 6]", r)
	}
	cs := ConfState(c)
	if !slices.Equal(cs.Voters, []uint64{1, 3}) || !slices.Equal(cs.Learners, []uint64{2}) {
		t.Errorf("ConfState voters %v learners %v, want [1 3] and [2]", cs.Voters, cs.Learners)
	}
}

// Data that is not a MembershipSnapshot, the JSON of development builds before it included, is
// refused with the snapshot's index and what is wrong.
func TestSnapshotClusterCorrupt(t *testing.T) {
	for _, data := range []string{"{", `{"history":{"deflated":"AQAA//8=","dropped":2,"events":0},"clusterID":"9","members":{}}`, ""} {
		_, err := SnapshotCluster(&raftpb.Snapshot{Data: []byte(data), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(7)}})
		if err == nil || !strings.HasPrefix(err.Error(), "snapshot at 7: ") {
			t.Errorf("%q: err = %v, want the snapshot's index and the decoding error", data, err)
		}
	}
}

// A snapshot's data is a clusterd.v2.MembershipSnapshot: the membership and the history's events
// as clusterd.v2.Event, and the count of events dropped before them.
func TestSnapshotHistory(t *testing.T) {
	c := membership.NewCluster(9, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}}})
	c.Removed = membership.NewIDSet(5)
	for i := range 3 {
		var err error
		ch := membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 1, PeerURLs: []string{"http://a:1"}},
			By: membership.Origin{CN: `o"dd\name`, Address: "127.0.0.1:5"}}
		if c, err = c.ApplyRecorded(ch, membership.Stamp{Index: uint64(10 + i), Term: 2, Time: time.Unix(1e9, 5e6).UTC()}, 2); err != nil {
			t.Fatal(err)
		}
	}
	data, got := roundTrip(t, c)
	if !reflect.DeepEqual(got.History.Events(), c.History.Events()) || got.History.Dropped() != 1 || !got.IsRemoved(5) || got.Member(1) == nil {
		t.Fatalf("decoded %+v (%d dropped), want %+v", got.History.Events(), got.History.Dropped(), c.History.Events())
	}
	s := &pb.MembershipSnapshot{}
	if err := proto.Unmarshal(data, s); err != nil || len(s.GetHistory()) != 2 || s.GetHistory()[0].GetRaftIndex() != 11 || s.GetHistoryDropped() != 1 || s.GetCluster().GetId() != 9 {
		t.Fatalf("not a MembershipSnapshot of 2 events from index 11, 1 dropped, cluster 9: %v, %v", err, s)
	}
	// A long history at its bound reads back the same.
	long := longHistory(t, 1000).WithMaxHistory(600)
	if _, got := roundTrip(t, long); !reflect.DeepEqual(got.History.Events(), long.History.Events()) || got.History.Dropped() != 400 {
		t.Fatalf("decoded %d events (%d dropped), want 600 (400 dropped)", got.History.Len(), got.History.Dropped())
	}
}
