package transport

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// FuzzEnvelope: no peer message panics its decoding or the receiver's checks, whether it arrives
// as a raft envelope or as a notice; an envelope that decodes encodes again to bytes that decode
// to the same IDs and message.
func FuzzEnvelope(f *testing.F) {
	ok, _ := proto.Marshal(&pb.Envelope{ClusterId: 1, From: 2, To: 3, Message: &raftpb.Message{
		Type: raftpb.MessageType_MsgApp.Enum(), Term: proto.Uint64(4), Index: proto.Uint64(5),
		Entries: []*raftpb.Entry{{Data: []byte("x")}},
	}})
	f.Add(ok)
	f.Add([]byte{})
	f.Add([]byte{0x22, 0x02, 0xff, 0xff})
	notice, _ := proto.Marshal(&pb.Notice{ClusterId: 1, From: 2, To: 3})
	f.Add(notice)
	tr := New(Config{LocalID: 3, ClusterID: 1})
	removed := membership.NewCluster(1, nil)
	removed.Removed = membership.NewIDSet(4)
	tr.Attach(&member{cluster: removed})
	f.Fuzz(func(t *testing.T, b []byte) {
		e := &pb.Envelope{}
		if err := proto.Unmarshal(b, e); err == nil {
			out, err := proto.Marshal(e)
			if err != nil {
				t.Fatalf("a decoded envelope does not encode: %v", err)
			}
			again := &pb.Envelope{}
			if err := proto.Unmarshal(out, again); err != nil {
				t.Fatalf("re-encoded envelope does not decode: %v", err)
			}
			if again.GetClusterId() != e.GetClusterId() || again.GetFrom() != e.GetFrom() || again.GetTo() != e.GetTo() || !proto.Equal(again.GetMessage(), e.GetMessage()) {
				t.Fatalf("round trip changed the envelope")
			}
			_ = tr.check(e)
		}
		var n pb.Notice
		_ = proto.Unmarshal(b, &n)
	})
}
