package transport

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"

	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// BenchmarkEnvelope is the raft stream's encoding on the hot path: one envelope through grpc's
// proto codec, as the sender writes it and the receiver reads it, for a heartbeat and for an
// append of 16 entries of 128 bytes (docs/benchmarks.md).
func BenchmarkEnvelope(b *testing.B) {
	codec := encoding.GetCodecV2(gproto.Name)
	for _, c := range []struct {
		name string
		m    *raftpb.Message
	}{{"heartbeat", heartbeat(1, 2)}, {"append-16x128B", benchAppend()}} {
		b.Run(c.name, func(b *testing.B) {
			env := &pb.Envelope{ClusterId: 0x9a1c2b3d4e5f6071, From: 0x77f41cbd71028a3a, To: 0x96dbf27657837fe1, Message: c.m}
			b.ReportAllocs()
			for b.Loop() {
				data, err := codec.Marshal(env)
				if err != nil {
					b.Fatal(err)
				}
				got := &pb.Envelope{}
				if err := codec.Unmarshal(data, got); err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}

func benchAppend() *raftpb.Message {
	m := &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(1), To: proto.Uint64(2),
		Term: proto.Uint64(3), Index: proto.Uint64(1000), LogTerm: proto.Uint64(3), Commit: proto.Uint64(999)}
	for i := range 16 {
		m.Entries = append(m.Entries, &raftpb.Entry{Term: proto.Uint64(3), Index: proto.Uint64(1001 + uint64(i)), Data: make([]byte, 128)})
	}
	return m
}
