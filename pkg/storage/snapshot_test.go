package storage

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

func TestSnapshotRoundTrip(t *testing.T) {
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://a:1"}},
		{ID: 2, PeerURLs: []string{"http://b:1"}, IsLearner: true},
		{ID: 3, Name: "c", PeerURLs: []string{"http://c:1"}, ClientURLs: []string{"http://c:2"}},
	})
	c.Removed = membership.NewIDSet(5, 6)
	data, err := SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SnapshotCluster(&raftpb.Snapshot{Data: data})
	if err != nil {
		t.Fatal(err)
	}
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
