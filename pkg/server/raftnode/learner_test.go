package raftnode

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// recorder is a transport that keeps what the node sends.
type recorder struct {
	mu   sync.Mutex
	sent []*raftpb.Message
}

func (r *recorder) Send(msgs []*raftpb.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, msgs...)
}

func (r *recorder) SetPeers(*membership.Cluster) {}

// votes returns the vote requests sent so far.
func (r *recorder) votes() []*raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*raftpb.Message
	for _, m := range r.sent {
		if m.GetType() == raftpb.MessageType_MsgVote {
			out = append(out, m)
		}
	}
	return out
}

const (
	leaderID  = membership.ID(1)
	learnerID = membership.ID(2)
	snapIndex = 10
)

// startLearner runs member 2, a learner of a cluster that member 1 leads, from a snapshot at
// index 10 of term 2. Its election timeout is far beyond the test, so it campaigns only when
// invited.
func startLearner(t *testing.T) (*Node, *recorder) {
	t.Helper()
	c := membership.NewCluster(7, []*membership.Member{
		{ID: leaderID, Name: "a", PeerURLs: []string{"http://127.0.0.1:1"}, Started: true},
		{ID: learnerID, Name: "b", PeerURLs: []string{"http://127.0.0.1:2"}, IsLearner: true},
	})
	data, err := storage.SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(snapIndex), Term: proto.Uint64(2), ConfState: storage.ConfState(c),
	}}
	hs := &raftpb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(snapIndex)}
	store, err := storage.Create(filepath.Join(t.TempDir(), "b"), storage.Identity{MemberID: learnerID, ClusterID: 7, Name: "b"}, snap, hs, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, store, 1000)
}

// run runs a node on store, with 10 ms ticks and electionTicks of them, sending into a recorder;
// the node stops and the store closes when the test ends.
func run(t *testing.T, store *storage.Store, electionTicks int) (*Node, *recorder) {
	t.Helper()
	return runTicking(t, store, electionTicks, 10*time.Millisecond)
}

// runTicking is run with raft's clock ticking every tick.
func runTicking(t *testing.T, store *storage.Store, electionTicks int, tick time.Duration) (*Node, *recorder) {
	t.Helper()
	tr := &recorder{}
	return runOn(t, store, tr, electionTicks, tick), tr
}

// runOn is runTicking sending into tr.
func runOn(t *testing.T, store *storage.Store, tr Transport, electionTicks int, tick time.Duration) *Node {
	t.Helper()
	t.Cleanup(func() { store.Close() })
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{
		Store: store, State: st, Transport: tr, TickInterval: tick,
		ElectionTicks: electionTicks, SnapshotCount: 10000, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return n
}

func step(t *testing.T, n *Node, m *raftpb.Message) {
	t.Helper()
	if err := n.Step(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// promotion is the leader's append, in term, of the entry at index 11 that promotes member 2,
// committed by the same message.
func promotion(t *testing.T, term uint64) *raftpb.Message {
	t.Helper()
	ch := membership.Change{Kind: membership.KindPromote, Member: membership.Member{ID: learnerID}}
	ctx, err := proposal{RequestID: 1, Term: term, Change: ch}.encode()
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(&raftpb.ConfChange{Type: confChangeType(ch).Enum(), NodeId: proto.Uint64(uint64(learnerID)), Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	e := &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(snapIndex + 1), Term: proto.Uint64(term), Data: data}
	return &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(uint64(leaderID)), To: proto.Uint64(uint64(learnerID)),
		Term: proto.Uint64(term), LogTerm: proto.Uint64(2), Index: proto.Uint64(snapIndex), Commit: proto.Uint64(snapIndex + 1),
		Entries: []*raftpb.Entry{e}}
}

func waitVoter(t *testing.T, n *Node) {
	t.Helper()
	waitUntil(t, "the promotion applied", func() bool {
		m := n.Cluster().Member(n.ID())
		return m != nil && !m.IsLearner
	})
}
