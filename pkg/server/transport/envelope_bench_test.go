package transport

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
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

// BenchmarkRaftStream is the raft stream end to end on loopback: appends of 16 entries of 128
// bytes, sent 256 at a time by one member's transport and stepped by another's (docs/benchmarks.md).
func BenchmarkRaftStream(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	recv := &stepCounter{cluster: membership.NewCluster(7, nil), stepped: make(chan struct{}, 1<<16)}
	receiver := New(Config{LocalID: 2, ClusterID: 7, Logger: discard})
	receiver.Attach(recv)
	s := grpc.NewServer()
	receiver.Register(s)
	go func() { _ = s.Serve(l) }()
	defer func() { s.Stop(); receiver.Close() }()
	sender := New(Config{LocalID: 1, ClusterID: 7, Logger: discard})
	sender.Attach(&stepCounter{cluster: membership.NewCluster(7, nil)})
	defer sender.Close()
	sender.SetPeers(membership.NewCluster(7, []*membership.Member{{ID: 2, PeerURLs: []string{"http://" + l.Addr().String()}}}))
	const batch = 256
	msgs := make([]*raftpb.Message, batch)
	for i := range msgs {
		msgs[i] = benchAppend()
	}
	send := func() {
		sender.Send(msgs)
		for range batch {
			<-recv.stepped
		}
	}
	send() // the connection and the stream
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		send()
	}
}

// stepCounter is a Handler that signals each message stepped.
type stepCounter struct {
	cluster *membership.Cluster
	stepped chan struct{}
}

func (h *stepCounter) Step(context.Context, *raftpb.Message) error {
	h.stepped <- struct{}{}
	return nil
}
func (h *stepCounter) ReportUnreachable(uint64)     {}
func (h *stepCounter) ReportSnapshot(uint64, bool)  {}
func (h *stepCounter) PeerLost(membership.ID)       {}
func (h *stepCounter) Cluster() *membership.Cluster { return h.cluster }
