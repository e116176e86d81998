package transport

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzEnvelope: no peer message panics the peer port's codec, whether it arrives as a raft
// envelope or as one of the JSON calls; an envelope that decodes encodes again to bytes that
// decode to the same IDs and message.
func FuzzEnvelope(f *testing.F) {
	ok, _ := (&Envelope{ClusterID: 1, From: 2, To: 3, Message: &raftpb.Message{
		Type: raftpb.MessageType_MsgApp.Enum(), Term: proto.Uint64(4), Index: proto.Uint64(5),
		Entries: []*raftpb.Entry{{Data: []byte("x")}},
	}}).MarshalBinary()
	f.Add(ok)
	f.Add([]byte{})
	f.Add(make([]byte, envelopeHeader))
	f.Add(append(make([]byte, envelopeHeader), 0xff, 0xff))
	f.Add([]byte(`{"clusterID":1,"from":2,"to":3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c codec
		e := &Envelope{}
		if err := c.Unmarshal(b, e); err == nil {
			out, err := c.Marshal(e)
			if err != nil {
				t.Fatalf("a decoded envelope does not encode: %v", err)
			}
			again := &Envelope{}
			if err := again.UnmarshalBinary(out); err != nil {
				t.Fatalf("re-encoded envelope does not decode: %v", err)
			}
			if again.ClusterID != e.ClusterID || again.From != e.From || again.To != e.To || !proto.Equal(again.Message, e.Message) {
				t.Fatalf("round trip changed the envelope")
			}
			if !bytes.Equal(out[:envelopeHeader], b[:envelopeHeader]) {
				t.Fatalf("round trip changed the header")
			}
			_ = e.size()
		}
		// The JSON calls (Hello, Removed, forwarded changes) go through the same codec.
		var n notice
		_ = c.Unmarshal(b, &n)
		var anything map[string]any
		_ = c.Unmarshal(b, &anything)
	})
}
