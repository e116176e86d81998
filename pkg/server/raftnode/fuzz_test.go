package raftnode

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// FuzzProposalOf: no entry panics the decoding the Ready loop and ForceNewCluster do on every
// committed entry (a log read from disk or sent by a leader is outside input); a decoded
// proposal encodes and decodes again to the same request, and a conf change carries one.
func FuzzProposalOf(f *testing.F) {
	p := proposal{RequestID: 7, Term: 2, Change: membership.Change{Kind: membership.KindAdd,
		Member: membership.Member{ID: 5, Name: "a", PeerURLs: []string{"http://127.0.0.1:2380"}}}, Time: time.Unix(1e9, 5)}
	add, _ := p.encode()
	rm, _ := removalEntry(9, 3, 2, time.Time{})
	f.Add(int32(raftpb.EntryType_EntryNormal), add)
	f.Add(int32(raftpb.EntryType_EntryNormal), []byte{})
	f.Add(int32(raftpb.EntryType_EntryNormal), []byte(`{"change":{"kind":99}}`))
	f.Add(int32(raftpb.EntryType_EntryNormal), []byte(`null`))
	f.Add(int32(raftpb.EntryType_EntryConfChange), rm.GetData())
	f.Add(int32(raftpb.EntryType_EntryConfChange), []byte{0x22, 0x02, '{', '}'})
	f.Add(int32(raftpb.EntryType_EntryConfChangeV2), []byte{})
	f.Add(int32(42), add)
	f.Fuzz(func(t *testing.T, typ int32, data []byte) {
		e := &raftpb.Entry{Type: raftpb.EntryType(typ).Enum(), Term: proto.Uint64(2), Index: proto.Uint64(3), Data: data}
		p, err := proposalOf(e)
		_, _ = changeOf(e)
		if _, derr := decodeProposal(data); derr == nil && typ == int32(raftpb.EntryType_EntryNormal) && len(data) > 0 && err != nil {
			t.Fatalf("a normal entry whose data decodes was refused: %v", err)
		}
		if err != nil || p == nil {
			return
		}
		b, err := p.encode()
		if err != nil {
			t.Fatalf("a decoded proposal does not encode: %v", err)
		}
		again, err := decodeProposal(b)
		if err != nil || again.RequestID != p.RequestID || again.Term != p.Term || again.Change.Kind != p.Change.Kind || !again.Time.Equal(p.Time) {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", p, b, again, err)
		}
		// Apply must take whatever a decoded entry asks, without panicking: the loop applies it.
		c := membership.NewCluster(1, nil)
		_, _ = c.Apply(p.Change)
		_ = c.Validate(p.Change)
	})
}
