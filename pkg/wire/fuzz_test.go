package wire

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// FuzzMessages: whatever bytes arrive as one of clusterd's own messages (a forwarded change, a
// dry run's verdict, a membership answer, a history request or answer, the -bin metadata), decoding and reading them
// into membership's values fails or succeeds without panicking, and what is read goes back on the
// wire.
func FuzzMessages(f *testing.F) {
	c := membership.NewCluster(7, []*membership.Member{{ID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:2380"}, Started: true}})
	c.Removed = membership.NewIDSet(2)
	for _, m := range []proto.Message{
		ClusterToProto(c),
		ChangeToProto(membership.Change{Kind: membership.KindAdd, Member: *c.Member(1), By: membership.Origin{Via: ViaMemberReplace}}),
		VerdictProto(&Report{Cluster: c, Member: *c.Member(1), Before: membership.QuorumReport{Voters: 1, Quorum: 1}}, status.Error(codes.NotFound, "etcdserver: member not found")),
		HistoryRequest{Member: "a", Limit: 3}.Proto(),
		&pb.HistoryAnswer{ClusterId: 7, Events: []*pb.Event{EventToProto(membership.Event{RaftIndex: 3, Change: "add", MemberID: 1})}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x12, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ch pb.ChangeRequest
		if proto.Unmarshal(b, &ch) == nil {
			_ = ChangeToProto(ChangeFromProto(ch.GetChange()))
		}
		var ma pb.MembershipAnswer
		if proto.Unmarshal(b, &ma) == nil {
			_ = ClusterToProto(ClusterFromProto(ma.GetCluster()))
		}
		var hr pb.HistoryRequest
		if proto.Unmarshal(b, &hr) == nil {
			if q := HistoryRequestFromProto(&hr); q.Limit < 0 {
				t.Fatalf("a negative limit: %d", q.Limit)
			}
		}
		var ha pb.HistoryAnswer
		if proto.Unmarshal(b, &ha) == nil {
			for _, ev := range EventsFromProto(ha.GetEvents()) {
				_ = EventToProto(ev)
			}
		}
		var verdict pb.ChangeReply
		if proto.Unmarshal(b, &verdict) == nil {
			r, refusal := VerdictFromProto(&verdict)
			_ = VerdictProto(r, refusal)
		}
		_, _ = MembersFromValue(string(b))
	})
}
