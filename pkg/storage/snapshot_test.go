package storage

import (
	"bytes"
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

// A snapshot's history is written by hand, first: the data is still the JSON encoding/json
// writes and reads, so an older member (which knows no history) and the fallback read it too.
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
	// encoding/json reads the same data to the same membership.
	plain := &membership.Cluster{}
	if err := json.Unmarshal(data, plain); err != nil || !reflect.DeepEqual(plain.History.Events(), c.History.Events()) {
		t.Fatalf("encoding/json: %v, %+v", err, plain.History.Events())
	}
	// An older member's Cluster, without the field, reads it too.
	var old struct {
		ID      membership.ID                        `json:"clusterID"`
		Members map[membership.ID]*membership.Member `json:"members"`
	}
	if err := json.Unmarshal(data, &old); err != nil || old.ID != 9 || len(old.Members) != 1 {
		t.Fatalf("an older member: %v, %+v", err, old)
	}
	// The history's first version wrote the records uncompressed, under "records": read the same.
	first := fmt.Appendf(nil, `%s%s","dropped":1},%s`, recordsPrefix, base64.StdEncoding.EncodeToString(c.History.AppendRecords(nil)), data[bytes.Index(data, []byte(`},"clusterID"`))+2:])
	for _, d := range [][]byte{first, data} {
		if _, _, ok := cutHistory(d); !ok {
			t.Fatalf("not read by hand: %.60s", d)
		}
		back, err := SnapshotCluster(&raftpb.Snapshot{Data: d})
		if err != nil || !reflect.DeepEqual(back.History.Events(), c.History.Events()) || back.History.Dropped() != 1 || !back.IsRemoved(5) {
			t.Fatalf("%.60s: %v, %+v", d, err, back)
		}
	}
	// Damaged after the prefix: refused, not read half.
	if _, err := SnapshotCluster(&raftpb.Snapshot{Data: data[:len(data)/2]}); err == nil {
		t.Fatal("a truncated snapshot was read")
	}
}
