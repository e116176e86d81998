package storage

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// longHistory is a cluster of three members whose history holds n changes, as make bench's
// filler makes them: a learner's peer URL updated back and forth by a client.
func longHistory(tb testing.TB, n int) *membership.Cluster {
	tb.Helper()
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "m1", PeerURLs: []string{"http://127.0.0.1:41001"}},
		{ID: 2, Name: "m2", PeerURLs: []string{"http://127.0.0.1:41002"}},
		{ID: 3, Name: "m3", PeerURLs: []string{"http://127.0.0.1:41003"}},
		{ID: 0x7ecec22f091e47a7, PeerURLs: []string{"http://127.0.0.1:41004"}, IsLearner: true},
	})
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	for i := range n {
		u := fmt.Sprintf("http://127.0.0.1:%d", 41004+i%2)
		ch := membership.Change{Kind: membership.KindUpdate, Member: membership.Member{ID: 0x7ecec22f091e47a7, PeerURLs: []string{u}},
			By: membership.Origin{Address: "127.0.0.1:53122"}}
		var err error
		st := membership.Stamp{Index: uint64(100 + i), Term: 2, Time: at.Add(time.Duration(i) * 1713 * time.Microsecond)}
		if c, err = c.ApplyRecorded(ch, st, max(n, 1)); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// BenchmarkReceiveSnapshot is a new member's way through the snapshot it is sent: the leader
// makes its data, the member decodes it and writes it into the database it created at start.
func BenchmarkReceiveSnapshot(b *testing.B) {
	for _, n := range []int{0, 10000} {
		c := longHistory(b, n)
		b.Run(fmt.Sprintf("events=%d/encode", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := SnapshotData(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		data, err := SnapshotData(c)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("events=%d: %d bytes of snapshot data", n, len(data))
		snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(20000), Term: proto.Uint64(2), ConfState: ConfState(c)}}
		b.Run(fmt.Sprintf("events=%d/decode", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := SnapshotCluster(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("events=%d/persist", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				s, err := Create(dir, Identity{MemberID: 4, ClusterID: 9, Name: "new"}, nil, &raftpb.HardState{}, membership.NewCluster(9, nil), c.WithoutRemoved())
				if err != nil {
					b.Fatal(err)
				}
				got, err := SnapshotCluster(snap)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.Save(Update{Snapshot: snap, ResetLog: true, Cluster: got, Applied: 20000}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
