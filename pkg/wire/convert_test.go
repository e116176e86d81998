package wire

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A membership, a change, a report and a history request come back from the wire as they went.
func TestRoundTrip(t *testing.T) {
	c := membership.NewCluster(7, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:2380"}, ClientURLs: []string{"http://127.0.0.1:2379"}, Started: true},
		{ID: 2, PeerURLs: []string{"http://127.0.0.1:2381"}, IsLearner: true},
	})
	c.Removed = membership.NewIDSet(9, 3)
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	c.History = membership.NewHistory([]membership.Event{
		{RaftIndex: 4, Term: 2, Time: when, Change: "add", MemberID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:2380"}, By: membership.Origin{CN: "root", Address: "127.0.0.1:5000", Via: ViaMemberReplace}},
		{RaftIndex: 5, Term: 2, Change: "publish", MemberID: 1, By: membership.Origin{Clusterd: membership.OriginPublish}},
	}, 3, 0)

	got := ClusterFromProto(roundTrip(t, ClusterToProto(c)))
	for i, ev := range c.History.Events() {
		if back := EventsFromProto([]*pb.Event{roundTrip(t, EventToProto(ev))}); !reflect.DeepEqual(back[0], ev) {
			t.Errorf("event %d: got %+v, want %+v", i, back[0], ev)
		}
	}
	if !reflect.DeepEqual(got.List(), c.List()) || got.ID != 7 || !got.IsRemoved(9) || !got.IsRemoved(3) || got.Removed.Len() != 2 {
		t.Errorf("cluster: got %+v", got)
	}
	if got.History.Len() != 0 {
		t.Errorf("the history went with the cluster: %+v", got.History.Events())
	}
	if ClusterToProto(nil) != nil || ClusterFromProto(nil) != nil {
		t.Error("a nil cluster is not nil on the wire")
	}

	ch := membership.Change{Kind: membership.KindUpdate, Member: *c.Member(2), By: membership.Origin{Via: ViaMemberPrune}}
	if got := ChangeFromProto(roundTrip(t, ChangeToProto(ch))); !reflect.DeepEqual(got, ch) {
		t.Errorf("change: got %+v, want %+v", got, ch)
	}

	r := &Report{Cluster: c, Member: *c.Member(1), Before: membership.QuorumReport{Voters: 3, Quorum: 2, FaultTolerance: -1}, After: membership.QuorumReport{Voters: 4, Learners: 1}}
	refusal := status.Error(codes.FailedPrecondition, "etcdserver: unhealthy cluster")
	for _, want := range []error{nil, refusal} {
		back, got := VerdictFromProto(roundTrip(t, VerdictProto(r, want)))
		if back.Cluster.Removed.Len() != 0 || len(back.Cluster.Members) != 2 {
			t.Errorf("a verdict leaves with its members only: %+v", back.Cluster)
		}
		back.Cluster = r.Cluster
		if !reflect.DeepEqual(back, r) || status.Code(got) != status.Code(want) || status.Convert(got).Message() != status.Convert(want).Message() {
			t.Errorf("verdict: got %+v, %v; want %+v, %v", back, got, r, want)
		}
	}

	q := HistoryRequest{Linearizable: true, Member: "a", Since: when, Limit: 5}
	if got := HistoryRequestFromProto(roundTrip(t, q.Proto())); got != q {
		t.Errorf("history request: got %+v, want %+v", got, q)
	}
	if got := HistoryRequestFromProto(&pb.HistoryRequest{Limit: -1}); got.Limit != 0 {
		t.Errorf("a negative limit reads as %d", got.Limit)
	}

	ms, err := MembersFromValue(MembersValue(c))
	if want := []membership.Member{{ID: 1, Name: "a", Started: true}, {ID: 2}}; err != nil || !reflect.DeepEqual(ms, want) {
		t.Errorf("members metadata: %+v, %v", ms, err)
	}
}

// roundTrip encodes m and decodes it into a new message of its type.
func roundTrip[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}
