package transport

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Envelope is one raft message on the wire with the identity of the cluster and of both ends.
type Envelope struct {
	ClusterID uint64
	From      uint64
	To        uint64
	Message   *raftpb.Message
}

const envelopeHeader = 24

// MarshalBinary writes the three IDs, then the raft message.
func (e *Envelope) MarshalBinary() ([]byte, error) {
	b := make([]byte, envelopeHeader, envelopeHeader+proto.Size(e.Message))
	binary.BigEndian.PutUint64(b[0:], e.ClusterID)
	binary.BigEndian.PutUint64(b[8:], e.From)
	binary.BigEndian.PutUint64(b[16:], e.To)
	return proto.MarshalOptions{}.MarshalAppend(b, e.Message)
}

// size is the length of MarshalBinary's output, which the metrics count as the bytes on the
// wire (gRPC's own framing aside, as etcd counts).
func (e *Envelope) size() int { return envelopeHeader + proto.Size(e.Message) }

// UnmarshalBinary reads what MarshalBinary wrote.
func (e *Envelope) UnmarshalBinary(b []byte) error {
	if len(b) < envelopeHeader {
		return errors.New("short peer envelope")
	}
	e.ClusterID = binary.BigEndian.Uint64(b[0:])
	e.From = binary.BigEndian.Uint64(b[8:])
	e.To = binary.BigEndian.Uint64(b[16:])
	e.Message = &raftpb.Message{}
	return proto.Unmarshal(b[envelopeHeader:], e.Message)
}

// codec is the peer port's only codec: envelopes in their binary form, and everything else as
// JSON, which keeps the peer protocol free of generated code.
type codec struct{}

func (codec) Name() string { return "clusterd-peer" }

func (codec) Marshal(v any) ([]byte, error) {
	if e, ok := v.(*Envelope); ok {
		return e.MarshalBinary()
	}
	return json.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	if e, ok := v.(*Envelope); ok {
		return e.UnmarshalBinary(data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("peer message: %w", err)
	}
	return nil
}

// ServerCodec is the option a peer gRPC server needs.
func ServerCodec() grpc.ServerOption { return grpc.ForceServerCodec(codec{}) }

// CallCodec is the option every call to a peer needs.
func CallCodec() grpc.CallOption { return grpc.ForceCodec(codec{}) }
