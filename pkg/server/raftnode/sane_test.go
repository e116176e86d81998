package raftnode

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// startPair runs member me of a cluster of member 1, a voter, and member 2 (a learner when
// learner), from a snapshot at index 10 of term 2, raft's clock ticking every millisecond with
// an election timeout of 3 ticks: member 1 alone elects itself and leads member 2; member 2
// as a voter campaigns and waits for votes nobody but the test sends.
func startPair(t *testing.T, me membership.ID, learner bool) (*Node, *storage.Store) {
	t.Helper()
	store := pairStore(t, me, learner, 2)
	n, _ := runTicking(t, store, 3, time.Millisecond)
	return n, store
}

// pairStore makes member me's database of the pair, its HardState of term.
func pairStore(t *testing.T, me membership.ID, learner bool, term uint64) *storage.Store {
	t.Helper()
	c := pairCluster(learner)
	data, err := storage.SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(snapIndex), Term: proto.Uint64(2), ConfState: storage.ConfState(c)}}
	hs := &raftpb.HardState{Term: proto.Uint64(term), Commit: proto.Uint64(snapIndex)}
	store, err := storage.Create(filepath.Join(t.TempDir(), me.String()), storage.Identity{MemberID: me, ClusterID: 7, Name: me.String()}, snap, hs, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func pairCluster(learner bool) *membership.Cluster {
	return membership.NewCluster(7, []*membership.Member{
		{ID: leaderID, Name: "a", PeerURLs: []string{"http://127.0.0.1:1"}, Started: true},
		{ID: learnerID, Name: "b", PeerURLs: []string{"http://127.0.0.1:2"}, IsLearner: learner, Started: true},
	})
}

func msg(typ raftpb.MessageType, from, to membership.ID, term uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: proto.Uint64(uint64(from)), To: proto.Uint64(uint64(to)), Term: proto.Uint64(term)}
}

// A message raft could not survive or never sends is refused at Step, before raft sees it;
// what a leader and a follower send each other passes.
func TestStepRefusesAbsurd(t *testing.T) {
	n, _ := startPair(t, learnerID, true)
	waitUntil(t, "the stored term", func() bool { return n.Term() == 2 })
	with := func(m *raftpb.Message, f func(*raftpb.Message)) *raftpb.Message { f(m); return m }
	hb := func(term uint64) *raftpb.Message {
		return msg(raftpb.MessageType_MsgHeartbeat, leaderID, learnerID, term)
	}
	entry := func(index, term uint64) *raftpb.Entry {
		return &raftpb.Entry{Type: raftpb.EntryType_EntryNormal.Enum(), Index: proto.Uint64(index), Term: proto.Uint64(term)}
	}
	app := func(term, index, logTerm uint64, ents ...*raftpb.Entry) *raftpb.Message {
		return with(msg(raftpb.MessageType_MsgApp, leaderID, learnerID, term), func(m *raftpb.Message) {
			m.Index, m.LogTerm, m.Entries = proto.Uint64(index), proto.Uint64(logTerm), ents
		})
	}
	for _, tc := range []struct {
		name string
		m    *raftpb.Message
	}{
		{"the term 2^64-1", hb(math.MaxUint64)},
		{"a term past MaxTerm", msg(raftpb.MessageType_MsgPreVote, leaderID, learnerID, storage.MaxTerm+1)},
		{"a term past the ceiling", hb(n.termCeiling() + 1<<20)},
		{"a local type", msg(raftpb.MessageType_MsgHup, leaderID, learnerID, 2)},
		{"a proposal", msg(raftpb.MessageType_MsgProp, leaderID, learnerID, 2)},
		{"a storage message", msg(raftpb.MessageType_MsgStorageAppend, leaderID, learnerID, 2)},
		{"a type out of range", msg(raftpb.MessageType(99), leaderID, learnerID, 2)},
		{"no term", hb(0)},
		{"from itself", msg(raftpb.MessageType_MsgHeartbeat, learnerID, learnerID, 2)},
		{"from nobody", msg(raftpb.MessageType_MsgHeartbeat, 0, learnerID, 2)},
		{"a commit past the log", with(hb(2), func(m *raftpb.Message) { m.Commit = proto.Uint64(snapIndex + 5) })},
		{"an index past MaxIndex", with(msg(raftpb.MessageType_MsgAppResp, leaderID, learnerID, 2), func(m *raftpb.Message) { m.Index = proto.Uint64(math.MaxUint64) })},
		{"a log term above the term", app(2, snapIndex, 3)},
		{"entries out of order", app(3, snapIndex, 2, entry(snapIndex+2, 3))},
		{"an entry of a later term", app(3, snapIndex, 2, entry(snapIndex+1, 4))},
		{"an entry of an earlier term than the one before", app(3, snapIndex, 2, entry(snapIndex+1, 3), entry(snapIndex+2, 2))},
		{"entries that overflow", app(3, storage.MaxIndex, 2, entry(storage.MaxIndex+1, 3))},
		{"a read index without its context", msg(raftpb.MessageType_MsgReadIndexResp, leaderID, learnerID, 2)},
		{"a vote with a local field", with(msg(raftpb.MessageType_MsgVote, leaderID, learnerID, 3), func(m *raftpb.Message) { m.Vote = proto.Uint64(1) })},
		{"a heartbeat with entries", with(hb(2), func(m *raftpb.Message) { m.Entries = []*raftpb.Entry{entry(1, 1)} })},
		{"a snapshot of a later term", snapshotMsg(t, 2, snapIndex+5, 3, pairCluster(true), nil)},
		{"a snapshot whose configuration is not its membership", snapshotMsg(t, 3, snapIndex+5, 3, pairCluster(true), &raftpb.ConfState{Voters: []uint64{1, 2}})},
	} {
		if err := n.Step(context.Background(), tc.m); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: Step returned %v, want ErrRefused", tc.name, err)
		}
	}
	if n.Term() != 2 {
		t.Errorf("term %d after the refused messages, want 2", n.Term())
	}
	for _, m := range []*raftpb.Message{
		with(hb(3), func(m *raftpb.Message) { m.Commit = proto.Uint64(snapIndex) }),
		app(3, snapIndex, 2, entry(snapIndex+1, 3), entry(snapIndex+2, 3)),
	} {
		if err := n.Step(context.Background(), m); err != nil {
			t.Errorf("a leader's %s: %v", m.GetType(), err)
		}
	}
	// A leader commits no more than this member acknowledged, once durable.
	waitUntil(t, "the entries durable", func() bool { return n.LastIndex() == snapIndex+2 })
	for _, m := range []*raftpb.Message{
		with(hb(3), func(m *raftpb.Message) { m.Commit = proto.Uint64(snapIndex + 2) }),
		hb(2 + storage.MaxTermStep),
		snapshotMsg(t, 2+storage.MaxTermStep, snapIndex+5, 3, pairCluster(true), nil),
	} {
		if err := n.Step(context.Background(), m); err != nil {
			t.Errorf("a leader's %s: %v", m.GetType(), err)
		}
	}
	waitUntil(t, "the term the leader's heartbeat carried", func() bool { return n.Term() == 2+storage.MaxTermStep })
	// An earlier leader's heartbeat or append, which raft ignores, may name what this member
	// no longer holds: it is no forgery.
	stale := []*raftpb.Message{
		with(hb(3), func(m *raftpb.Message) { m.Commit = proto.Uint64(snapIndex + 50) }),
		app(3, snapIndex, 2, entry(snapIndex+1, 2)),
	}
	for _, m := range stale {
		if err := n.Step(context.Background(), m); err != nil {
			t.Errorf("an earlier leader's %s: %v", m.GetType(), err)
		}
	}
}

// The highest term a peer's message may carry is fixed when the process starts, moving with the
// clock alone: messages forged one after another, each at the ceiling of the moment, leave the
// member below that ceiling, where one message 2^32 above the term of the moment would have
// raised it by 2^32 each time. A term past the ceiling is refused.
func TestStepTermCeiling(t *testing.T) {
	start := time.Now()                   // before the member's own start: its allowance is no larger than this one's
	n, _ := startPair(t, learnerID, true) // a learner: no campaign of its own moves its term
	waitUntil(t, "the stored term", func() bool { return n.Term() == 2 })
	for range 100 {
		m := msg(raftpb.MessageType_MsgHeartbeat, leaderID, learnerID, n.termCeiling())
		if err := n.Step(context.Background(), m); err != nil {
			t.Fatalf("a heartbeat at the ceiling: %v", err)
		}
	}
	over := msg(raftpb.MessageType_MsgHeartbeat, leaderID, learnerID, n.termCeiling()+1<<20)
	if err := n.Step(context.Background(), over); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "plus 2^32 plus one an election timeout since") {
		t.Fatalf("a heartbeat past the ceiling: %v", err)
	}
	waitUntil(t, "the forged term", func() bool { return n.Term() > storage.MaxTermStep })
	// 3 ms a tick's election timeout: the clock's allowance since the start, and more.
	if limit := 2 + storage.MaxTermStep + uint64(time.Since(start)/(3*time.Millisecond)) + 1; n.Term() > limit {
		t.Fatalf("term %d after 100 forged heartbeats, past %d", n.Term(), limit)
	}
}

// snapshotMsg is a leader's snapshot of c at index and snapTerm, sent in term, with raft's
// configuration cs (c's when nil).
func snapshotMsg(t *testing.T, term, index, snapTerm uint64, c *membership.Cluster, cs *raftpb.ConfState) *raftpb.Message {
	t.Helper()
	data, err := storage.SnapshotData(c)
	if err != nil {
		t.Fatal(err)
	}
	if cs == nil {
		cs = storage.ConfState(c)
	}
	m := msg(raftpb.MessageType_MsgSnap, leaderID, learnerID, term)
	m.Snapshot = &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(snapTerm), ConfState: cs}}
	return m
}

// fuzzReader hands out the fuzz input a piece at a time, zeros once it runs out.
type fuzzReader []byte

func (r *fuzzReader) byte() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

// number is a value around those raft's bounds care about, or eight bytes of input.
func (r *fuzzReader) number(term, ceiling uint64) uint64 {
	near := []uint64{0, 1, 2, 3, snapIndex - 1, snapIndex, snapIndex + 1, snapIndex + 2, term, term + 1,
		term + storage.MaxTermStep, term + storage.MaxTermStep + 1, storage.MaxTerm, storage.MaxTerm + 1, math.MaxUint64 - 1, math.MaxUint64,
		ceiling, ceiling + 1}
	b := r.byte()
	if int(b) < len(near) {
		return near[b]
	}
	var v [8]byte
	for i := range v {
		v[i] = r.byte()
	}
	return binary.BigEndian.Uint64(v[:])
}

// message builds a raft message, every field from the input, to member n of a pair.
func (r *fuzzReader) message(t *testing.T, n *Node) *raftpb.Message {
	to, term, ceiling := n.ID(), n.Term(), n.termCeiling()
	num := func() uint64 { return r.number(term, ceiling) }
	froms := []membership.ID{leaderID, learnerID, 3, 0}
	m := msg(raftpb.MessageType(r.byte()%26), froms[r.byte()%4], to, num())
	m.LogTerm, m.Index, m.Commit = proto.Uint64(num()), proto.Uint64(num()), proto.Uint64(num())
	m.Reject, m.RejectHint = proto.Bool(r.byte()%2 == 1), proto.Uint64(num())
	if b := r.byte(); b%4 == 0 {
		m.Context = []byte{b}
	}
	for range r.byte() % 4 {
		e := &raftpb.Entry{Type: raftpb.EntryType(r.byte() % 4).Enum(), Index: proto.Uint64(num()), Term: proto.Uint64(num())}
		if b := r.byte(); b%2 == 1 {
			e.Data = []byte{b}
		}
		m.Entries = append(m.Entries, e)
	}
	if b := r.byte(); b%3 != 0 {
		c := pairCluster(b%3 == 1)
		s := snapshotMsg(t, term, num(), num(), c, nil)
		if r.byte()%4 == 0 {
			s.Snapshot.Metadata.ConfState = &raftpb.ConfState{Voters: []uint64{uint64(r.byte())}, Learners: []uint64{uint64(r.byte())}}
		}
		m.Snapshot = s.Snapshot
	}
	if r.byte()%8 == 0 {
		m.Vote = proto.Uint64(1)
	}
	return m
}

// FuzzStep: no message a peer sends, of any type with any fields, makes a running member
// panic, now or in the elections that follow, or leaves it a stored term past its ceiling
// (termCeiling) and the one campaign of its own above it. raft panics in a goroutine of its own,
// which fails the whole run.
func FuzzStep(f *testing.F) {
	// role, type, sender, term, then the rest; 15 picks 2^64-1, 8 the current term.
	f.Add([]byte{0, 8, 0, 15})
	f.Add([]byte{1, 8, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 3, 0, 9, 5, 5, 8, 0, 0, 0, 0, 2, 0, 1, 6, 0})
	f.Add([]byte{1, 7, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 6, 2, 0})
	f.Add([]byte{0, 4, 1, 9, 0, 15, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 16, 1, 9, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzReader(data)
		role := r.byte() % 3
		me := []membership.ID{leaderID, learnerID, learnerID}[role]
		n, store := startPair(t, me, role != 2)
		if me == leaderID {
			waitUntil(t, "the member leads", func() bool { return n.Leader() == n.ID() })
		}
		for i := 0; i < 4 && len(r) > 0; i++ {
			_ = n.Step(context.Background(), r.message(t, n))
		}
		// Some election timeouts (3 ms each), in which a term pushed to where the next
		// campaign overflows would panic: what is tested is that nothing happens.
		time.Sleep(20 * time.Millisecond)
		st, err := store.Load()
		if err != nil {
			t.Fatal(err)
		}
		if limit := n.termCeiling() + 1; st.HardState.GetTerm() > limit {
			t.Fatalf("stored term %d, past the ceiling and one campaign: %d", st.HardState.GetTerm(), limit)
		}
	})
}

// A member whose stored term is already past storage.MaxTerm does not start: raft would panic
// at its first campaign. The one line names the command that recovers it.
func TestNewRefusesAbsurdStoredTerm(t *testing.T) {
	store := pairStore(t, leaderID, true, math.MaxUint64)
	defer store.Close()
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Store: store, State: st, Transport: &recorder{}, TickInterval: time.Millisecond, ElectionTicks: 3})
	if err == nil || !strings.Contains(err.Error(), "term 18446744073709551615") || !strings.Contains(err.Error(), "clusterctl datadir reset-term") {
		t.Fatalf("New: %v", err)
	}
}

// A heartbeat committing past the end of raft's log makes raft panic (raftLog.commitTo), and
// raft's log may end below this member's memory log: after an append raft rejected (nothing
// appended, whatever commit it named), or one that truncated raft's log a Ready before the
// loop's. Both forged pairs are refused at the heartbeat, and the member goes on.
func TestStepRefusesCommitPastRaftLog(t *testing.T) {
	n, _ := startPair(t, learnerID, true)
	waitUntil(t, "the stored term", func() bool { return n.Term() == 2 })
	entry := func(index, term uint64) *raftpb.Entry {
		return &raftpb.Entry{Type: raftpb.EntryType_EntryNormal.Enum(), Index: proto.Uint64(index), Term: proto.Uint64(term)}
	}
	app := func(term, index, logTerm, commit uint64, ents ...*raftpb.Entry) *raftpb.Message {
		m := msg(raftpb.MessageType_MsgApp, leaderID, learnerID, term)
		m.Index, m.LogTerm, m.Commit, m.Entries = proto.Uint64(index), proto.Uint64(logTerm), proto.Uint64(commit), ents
		return m
	}
	hb := func(term, commit uint64) *raftpb.Message {
		m := msg(raftpb.MessageType_MsgHeartbeat, leaderID, learnerID, term)
		m.Commit = proto.Uint64(commit)
		return m
	}
	pairs := [][2]*raftpb.Message{
		// raft rejects the append (nothing at index 50 to match) and commits nothing.
		{app(3, 50, 3, 51, entry(51, 3)), hb(3, 51)},
		// raft truncates its log to index 11 at once; the memory log still ends at 12.
		{app(4, snapIndex, 2, snapIndex, entry(snapIndex+1, 4)), hb(4, snapIndex+2)},
	}
	step(t, n, app(3, snapIndex, 2, snapIndex, entry(snapIndex+1, 3), entry(snapIndex+2, 3)))
	waitUntil(t, "the entries durable", func() bool { return n.LastIndex() == snapIndex+2 })
	for i, p := range pairs {
		if err := n.Step(context.Background(), p[0]); err != nil {
			t.Fatalf("pair %d: the append: %v", i, err)
		}
		if err := n.Step(context.Background(), p[1]); !errors.Is(err, ErrRefused) {
			t.Fatalf("pair %d: the heartbeat committing %d: %v, want ErrRefused", i, p[1].GetCommit(), err)
		}
	}
	// Some election timeouts (3 ms each), long enough for raft's goroutine to panic had it
	// taken a heartbeat: the member still answers, and its log is the last append's.
	waitUntil(t, "the truncated log durable", func() bool { return n.LastIndex() == snapIndex+1 })
	step(t, n, hb(4, snapIndex+1))
	waitUntil(t, "the commit", func() bool { return n.Applied() == snapIndex+1 })
}

// A leader sends appends one after another without waiting for their answers, then commits
// what they carried: the heartbeat that commits it passes, however the appends fell between
// the loop's Readies.
func TestStepPassesPipelinedAppends(t *testing.T) {
	n, tr := runTicking(t, pairStore(t, learnerID, true, 2), 3, time.Millisecond)
	app := func(index, logTerm, commit uint64) *raftpb.Message {
		m := msg(raftpb.MessageType_MsgApp, leaderID, learnerID, 3)
		m.Index, m.LogTerm, m.Commit = proto.Uint64(index), proto.Uint64(logTerm), proto.Uint64(commit)
		for i := index + 1; i <= index+2; i++ {
			m.Entries = append(m.Entries, &raftpb.Entry{Type: raftpb.EntryType_EntryNormal.Enum(), Index: proto.Uint64(i), Term: proto.Uint64(3)})
		}
		return m
	}
	acked := func(index uint64) func() bool {
		return func() bool {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			for _, m := range tr.sent {
				if m.GetType() == raftpb.MessageType_MsgAppResp && !m.GetReject() && m.GetIndex() == index {
					return true
				}
			}
			return false
		}
	}
	// The new leader's first append, answered before it sends more (raft probes first).
	step(t, n, app(snapIndex, 2, snapIndex))
	waitUntil(t, "the first append acknowledged", acked(snapIndex+2))
	last := uint64(snapIndex + 2)
	for range 20 {
		step(t, n, app(last, 3, last))
		step(t, n, app(last+2, 3, last))
		waitUntil(t, "the appends acknowledged", acked(last+4))
		last += 4
		hb := msg(raftpb.MessageType_MsgHeartbeat, leaderID, learnerID, 3)
		hb.Commit = proto.Uint64(last)
		step(t, n, hb)
	}
	waitUntil(t, "the commit", func() bool { return n.Applied() == last })
}
