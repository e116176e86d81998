package storage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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

func TestSnapshotClusterCorrupt(t *testing.T) {
	_, err := SnapshotCluster(&raftpb.Snapshot{Data: []byte("{"), Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(7)}})
	var syntax *json.SyntaxError
	if err == nil || !strings.HasPrefix(err.Error(), "snapshot at 7: ") || !errors.As(err, &syntax) {
		t.Errorf("err = %v, want the snapshot's index and the decoding error", err)
	}
}

// A history at its bound travels with its oldest block whole and the count of that block's
// events it dropped, and reads back the same. A reader that knows no skip, as the builds before
// it, finds more events in the blocks than the data counts, and refuses the snapshot.
func TestSnapshotHistorySkip(t *testing.T) {
	c := longHistory(t, 1000).WithMaxHistory(600)
	data, got := roundTrip(t, c)
	if !reflect.DeepEqual(got.History.Events(), c.History.Events()) || got.History.Dropped() != 400 {
		t.Fatalf("decoded %d events (%d dropped), want 600 (400 dropped)", got.History.Len(), got.History.Dropped())
	}
	s := &pb.MembershipSnapshot{}
	if err := proto.Unmarshal(data, s); err != nil {
		t.Fatal(err)
	}
	blocks := s.GetHistoryBlocks()
	if len(blocks) == 0 {
		t.Fatal("no history blocks")
	}
	if s.GetHistoryEvents() != 600 || blocks[0].GetSkip() == 0 || blocks[0].GetSkip() >= blocks[0].GetEvents() {
		t.Fatalf("history_events %d, first block %d events skipping %d", s.GetHistoryEvents(), blocks[0].GetEvents(), blocks[0].GetSkip())
	}
	blocks[0].Skip = 0
	older, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SnapshotCluster(&raftpb.Snapshot{Data: older}); err == nil {
		t.Fatal("the blocks read without their skip")
	}
}

// A snapshot's data is a clusterd.v2.MembershipSnapshot: the membership and the history's
// compressed blocks, as bytes. The JSON forms that earlier versions wrote still read the same,
// and data cut short at any byte is refused, never read as a smaller membership.
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
	if err := proto.Unmarshal(data, s); err != nil || s.GetHistoryEvents() != 2 || s.GetHistoryDropped() != 1 || s.GetCluster().GetId() != 9 {
		t.Fatalf("not a MembershipSnapshot of 2 events, 1 dropped, cluster 9: %v, %v", err, s)
	}
	// Cut at any byte, also between two blocks of a longer history: refused.
	long, err := SnapshotData(longHistory(t, 600))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{data, long} {
		for n := range len(d) {
			if _, err := SnapshotCluster(&raftpb.Snapshot{Data: d[:n]}); err == nil {
				t.Fatalf("data cut at %d of %d bytes was read", n, len(d))
			}
		}
	}

	// The message's first version: the blocks as one DEFLATE stream.
	deflated, events, dropped := c.History.AppendDeflated(nil)
	first, err := proto.Marshal(&pb.MembershipSnapshot{HistoryEvents: uint64(events), HistoryDropped: dropped, History: deflated, Cluster: s.GetCluster()})
	if err != nil {
		t.Fatal(err)
	}
	if back, err := SnapshotCluster(&raftpb.Snapshot{Data: first}); err != nil || !reflect.DeepEqual(back.History.Events(), c.History.Events()) || back.History.Dropped() != 1 || !back.IsRemoved(5) {
		t.Fatalf("the first binary form: %v, %+v", err, back)
	}

	// The earlier versions' JSON: encoding/json's (history last), the history cut out by hand
	// first (counted, or one DEFLATE stream), and the history's first version (uncompressed).
	rest, err := json.Marshal(&membership.Cluster{ID: c.ID, Members: c.Members, Removed: c.Removed})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	earlier := map[string][]byte{
		"encoding/json": plain,
		"counted":       fmt.Appendf(nil, `%s%s","dropped":%d,"events":%d},%s`, historyPrefix, base64.StdEncoding.EncodeToString(deflated), dropped, events, rest[1:]),
		"one stream":    fmt.Appendf(nil, `%s%s","dropped":%d},%s`, historyPrefix, base64.StdEncoding.EncodeToString(deflated), dropped, rest[1:]),
		"records":       fmt.Appendf(nil, `%s%s","dropped":%d},%s`, recordsPrefix, base64.StdEncoding.EncodeToString(c.History.AppendRecords(nil)), dropped, rest[1:]),
	}
	for name, d := range earlier {
		if _, _, ok := cutHistory(d); ok == (name == "encoding/json") {
			t.Fatalf("%s: read by hand %v", name, ok)
		}
		back, err := SnapshotCluster(&raftpb.Snapshot{Data: d})
		if err != nil || !reflect.DeepEqual(back.History.Events(), c.History.Events()) || back.History.Dropped() != 1 || !back.IsRemoved(5) || back.Member(1) == nil {
			t.Fatalf("%s: %v, %+v", name, err, back)
		}
		// Damaged after the prefix: refused, not read half.
		if _, err := SnapshotCluster(&raftpb.Snapshot{Data: d[:len(d)/2]}); err == nil {
			t.Fatalf("%s: a truncated snapshot was read", name)
		}
	}
}
