package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

var (
	// ErrRemoved ends Run when this member applied its own removal or the cluster confirmed
	// that it had been removed (MarkRemoved). It ends the process, never an RPC, so it is not
	// in the registry.
	ErrRemoved = errors.New("this member has been permanently removed from the cluster")
)

// The errors of proposing are the registry's (pkg/rpcerr), so that the API answers them with the
// contract's code and message and a forwarding member reads them back as the same values.
var (
	// ErrNotLeader is returned by Propose on a member that is not the leader.
	ErrNotLeader error = rpcerr.ErrNotLeader
	// ErrNoLeader is returned when the cluster has no leader to decide.
	ErrNoLeader error = rpcerr.ErrNoLeader
	// ErrTimeout is returned when a proposal was made but not applied in time: its outcome is
	// unknown.
	ErrTimeout error = rpcerr.ErrTimeout
	// ErrStopped is returned once the node is shutting down.
	ErrStopped error = rpcerr.ErrStopped
	// ErrProposalLost is returned when a proposal is known never to be applied (raft dropped
	// it, or a later leader overwrote it): proposing again is safe.
	ErrProposalLost error = rpcerr.ErrProposalLost
)

// Transport sends raft messages to peers and learns their addresses from the membership.
type Transport interface {
	Send(msgs []*raftpb.Message)
	SetPeers(c *membership.Cluster)
}

// Config configures a Node.
type Config struct {
	Store         *storage.Store
	State         *storage.State // as loaded from Store
	Transport     Transport
	TickInterval  time.Duration // the heartbeat interval
	ElectionTicks int
	SnapshotCount uint64
	// MaxHistory is how many changes the membership history keeps, the newest; zero keeps all.
	MaxHistory int
	Logger     *slog.Logger
	// Metrics receives the leader changes, bbolt commits and proposals; nil for none.
	Metrics *metrics.Metrics
}

type logPos struct{ index, term uint64 }

type result struct {
	cluster *membership.Cluster
	err     error
}

type waiter struct {
	term uint64
	ch   chan result
}

// Node is a running raft member.
type Node struct {
	cfg   Config
	id    uint64
	raft  raft.Node
	mem   *raft.MemoryStorage
	store *storage.Store
	log   *slog.Logger

	cluster     atomic.Pointer[membership.Cluster]
	applied     atomic.Uint64
	appliedTerm atomic.Uint64
	lead        atomic.Uint64
	term        atomic.Uint64
	commit      atomic.Uint64 // raft's commit index, as of the last HardState
	// lastConf is where the latest conf-change entry was appended to this member's log.
	lastConf  atomic.Pointer[logPos]
	snapIndex uint64 // only the loop touches it
	// stepMu makes the check of a peer's message and its step one (sane.go), and guards the
	// bounds on raft's last index (logStepped, noteReady, markLog): logFloor, at or below it
	// whatever raft did with the messages stepped; recentEnd, the lowest end of log that a
	// message counted since the loop last set logFloor named; logHigh, at or above it but for
	// the one entry a new leader appends, while this member is not known to lead.
	stepMu    sync.Mutex
	logFloor  uint64
	recentEnd uint64
	logHigh   uint64
	// termBase is the term this member held when New built it, and termSince when: with the
	// clock alone they fix the highest term a peer's message may carry (termCeiling).
	termBase  uint64
	termSince time.Time

	mu      sync.Mutex
	waiters map[uint64]*waiter
	reads   map[string]chan uint64
	// Each is closed and replaced (notify) whenever: the applied index advances or the leader
	// changes; the leader or the term changes (raft then drops a pending read silently, so the
	// reads ask again at once); a peer's acknowledgement of entries is stepped.
	progress, leaderCh, acked chan struct{}

	confMu sync.Mutex // one membership change in flight
	// toldRemoved: the cluster, not an applied entry, confirmed this member is removed; Run
	// writes the tombstone then, since only the loop may write to the store and only while it
	// is open.
	toldRemoved atomic.Bool
	// stopping is closed as soon as this member knows it is removed or Run is ending, before
	// anything else of the shutdown: every wait for raft selects on it, so no client request
	// waits on a member that will never answer it. While Run runs, only a removal closes it.
	stopping chan struct{}
	stopOnce sync.Once

	// heard is when, and in which term, raft's own traffic last came from each member
	// (HeardWithin): ID to heardAt. PeerLost deletes a member's entry.
	heard sync.Map
	// ledSince is when this member last became leader, in Unix nanoseconds (LeadingFor).
	ledSince atomic.Int64
}

// heardAt is when raft's traffic of term last came from a member.
type heardAt struct {
	term uint64
	at   time.Time
}

// restartStorage hands raft the configuration of the applied membership, not the older one
// of the last snapshot: conf changes applied since the snapshot are not replayed to raft.
type restartStorage struct {
	*raft.MemoryStorage
	cs *raftpb.ConfState
}

func (s restartStorage) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	return hs, s.cs, err
}

// New rebuilds a node from its stored state.
func New(cfg Config) (*Node, error) {
	st := cfg.State
	if err := absurdStoredTerm(st); err != nil {
		return nil, err
	}
	mem := raft.NewMemoryStorage()
	if st.Snapshot != nil {
		if err := mem.ApplySnapshot(st.Snapshot); err != nil {
			return nil, err
		}
	}
	if err := mem.SetHardState(st.HardState); err != nil {
		return nil, err
	}
	if err := mem.Append(st.Entries); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, id: uint64(st.MemberID), mem: mem, store: cfg.Store, log: cfg.Logger,
		snapIndex: st.Snapshot.GetMetadata().GetIndex(),
		termBase:  st.HardState.GetTerm(), termSince: time.Now(),
		waiters: map[uint64]*waiter{}, reads: map[string]chan uint64{},
		progress: make(chan struct{}), leaderCh: make(chan struct{}), acked: make(chan struct{}),
		stopping: make(chan struct{}),
	}
	n.cluster.Store(st.Cluster.WithMaxHistory(cfg.MaxHistory))
	n.applied.Store(st.Applied)
	n.commit.Store(st.HardState.GetCommit())
	n.logFloor, n.recentEnd, n.logHigh = n.LastIndex(), math.MaxUint64, n.LastIndex()
	n.term.Store(st.HardState.GetTerm())
	if t, err := mem.Term(st.Applied); err == nil {
		n.appliedTerm.Store(t)
	}
	n.raft = raft.RestartNode(&raft.Config{
		ID:                        n.id,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             1,
		Storage:                   restartStorage{mem, storage.ConfState(st.Cluster)},
		Applied:                   st.Applied,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum:               true,
		PreVote:                   true,
		StepDownOnRemoval:         true,
		DisableProposalForwarding: true,
		Logger:                    raftLogger{cfg.Logger},
	})
	cfg.Transport.SetPeers(st.Cluster)
	return n, nil
}

// Run drives the node until ctx ends (nil) or this member is removed (ErrRemoved). A storage
// error ends it too: a member that cannot persist must not go on voting.
func (n *Node) Run(ctx context.Context) error {
	defer n.raft.Stop()
	// Proposals still waiting were made: whether they apply is unknown.
	defer n.failAll(ErrTimeout)
	defer n.stop()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.stopping:
			if n.toldRemoved.Load() {
				if err := n.store.Save(storage.Update{Tombstone: true}); err != nil {
					// Removed all the same: its peers refuse it whether or not the tombstone is on disk.
					n.log.Error("writing the removal tombstone", "err", err)
				}
			}
			return ErrRemoved
		case <-ticker.C:
			n.raft.Tick()
		case rd := <-n.raft.Ready():
			if err := n.handleReady(rd); err != nil {
				return err
			}
		}
	}
}

// notify closes *ch, waking whoever took it with current, and replaces it for the next wait.
func (n *Node) notify(ch *chan struct{}) {
	n.mu.Lock()
	close(*ch)
	*ch = make(chan struct{})
	n.mu.Unlock()
}

// current is *ch as of now: closed by the next notify.
func (n *Node) current(ch *chan struct{}) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return *ch
}

// stop marks the member as stopping: every waiter is released and every new request refused
// with ErrStopped. Idempotent.
func (n *Node) stop() { n.stopOnce.Do(func() { close(n.stopping) }) }

// Stopped reports whether this member knows it is removed or is shutting down: nothing it
// starts from then on can be answered by the cluster.
func (n *Node) Stopped() bool {
	select {
	case <-n.stopping:
		return true
	default:
		return false
	}
}

// WithStop returns a context that is also cancelled, with ErrStopped as its cause, once this
// member is stopping, so that a call to another member (a forwarded change) ends at once too.
func (n *Node) WithStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-n.stopping:
			cancel(ErrStopped)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// WaitFor blocks until cond holds, looking again each time the applied index advances or the
// leader changes; it gives up (false) when ctx ends or the node stops.
func (n *Node) WaitFor(ctx context.Context, cond func() bool) bool {
	for {
		ch := n.current(&n.progress)
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-n.stopping:
			return false
		}
	}
}

// MarkRemoved records that the cluster confirmed this member's removal (a majority of its voters
// said so: the server's removal check, never one peer's word), and stops it. It may be called
// from any goroutine, any number of times, also after Run has returned: it only asks Run to
// write the tombstone and return.
func (n *Node) MarkRemoved() {
	n.toldRemoved.Store(true)
	n.stop()
}

// ErrRefused is a peer's message that carries what this member could not apply: a snapshot
// whose data is not a membership, or an entry that is not a proposal. Raft never sees it; had it
// taken it, the member would stop when the entry or snapshot came to be applied.
var ErrRefused = errors.New("refused")

// Step hands a message from a peer to raft, as the peer sent it. A message raft could not apply
// or survive, or never sends to a peer, is refused first (ErrRefused) and counted: one of a term,
// index or type raft cannot take (sane.go), a snapshot whose data is not a membership or whose
// configuration is not its membership's, or an append with an entry that is not a proposal;
// raft never sees it.
func (n *Node) Step(ctx context.Context, m *raftpb.Message) error {
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	if err := n.absurd(m); err != nil {
		return n.refused(err)
	}
	switch m.GetType() {
	case raftpb.MessageType_MsgSnap:
		if err := snapshotUnfit(m.GetSnapshot()); err != nil {
			return n.refused(err)
		}
	case raftpb.MessageType_MsgApp:
		for _, e := range m.GetEntries() {
			if _, err := proposalOf(e); err != nil {
				return n.refused(fmt.Errorf("entry %d: %v", e.GetIndex(), err))
			}
		}
	}
	n.logStepped(m)
	err := n.raft.Step(ctx, m)
	if err == nil {
		n.hear(m)
	}
	if m.GetType() == raftpb.MessageType_MsgAppResp {
		n.notify(&n.acked)
	}
	return err
}

// electionTimeout is raft's election timeout: ElectionTicks ticks of TickInterval.
func (n *Node) electionTimeout() time.Duration {
	return time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
}

// HeardWithin reports whether member id counts as live: raft's own traffic from it reached
// this member within d, in the current term, and its connection has not broken since (PeerLost).
// Traffic is an append, heartbeat or snapshot from it (it leads), its acknowledgement of one
// (this member leads), or its answer to this member's campaign (a new leader has heard its
// voters before their first acknowledgement). It is the liveness the strict reconfiguration
// check and the leader hand-off count: a notice outside raft never counts, nor does a message of
// an earlier term, so a new leader counts only what it heard itself in its own term, never what
// it heard as a follower of the leader before it.
func (n *Node) HeardWithin(id membership.ID, d time.Duration) bool {
	return n.HeardSince(id, time.Now().Add(-d))
}

// HeardSince is HeardWithin for traffic that reached this member at t or after.
func (n *Node) HeardSince(id membership.ID, t time.Time) bool {
	v, ok := n.heard.Load(id)
	if !ok {
		return false
	}
	h := v.(heardAt)
	return h.term == n.term.Load() && !h.at.Before(t)
}

// PeerLost is told by the transport that the connection from or to member id broke: its stream
// ended, its process closed the socket, or a send to it failed. What was heard from it before no
// longer counts (HeardWithin) until raft's traffic from it arrives again: a member that stopped a
// moment ago is not live, whatever it said just before.
func (n *Node) PeerLost(id membership.ID) { n.heard.Delete(id) }

// LeadingFor is how long this member has led, in its current term; 0 when it does not lead. A
// leader that has led for less than an election timeout may not have heard yet from voters
// that are up: those that neither elected it nor acknowledged its first entry.
func (n *Node) LeadingFor() time.Duration {
	if n.lead.Load() != n.id {
		return 0
	}
	return time.Since(time.Unix(0, n.ledSince.Load()))
}

// HoldsOwnRemoval reports whether this member's log, beyond what it has applied, holds an entry
// that removes it. A removal commits only once a majority of the configuration it changes holds
// it, so such an entry is this member's own acknowledgement of its removal to the leader that
// appended it: its vote among the voters that confirm the removal. A member forced into a new
// cluster (--force-new-cluster) appends removals nobody else ever held.
func (n *Node) HoldsOwnRemoval() bool {
	first, err := n.mem.FirstIndex()
	if err != nil {
		return false
	}
	last, err := n.mem.LastIndex()
	if err != nil {
		return false
	}
	lo := max(first, n.applied.Load()+1)
	if lo > last {
		return false
	}
	ents, err := n.mem.Entries(lo, last+1, math.MaxUint64)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if ch, ok := changeOf(e); ok && ch.Kind == membership.KindRemove && ch.Member.ID == membership.ID(n.id) {
			return true
		}
	}
	return false
}

// lists reports whether id is a member, by the applied membership or, for a snapshot a joining
// member has not applied yet, by the snapshot's configuration: a new member hears its leader
// first in the snapshot that makes it a member.
func (n *Node) lists(id membership.ID, m *raftpb.Message) bool {
	if n.Cluster().Member(id) != nil {
		return true
	}
	cs := m.GetSnapshot().GetMetadata().GetConfState()
	return m.GetType() == raftpb.MessageType_MsgSnap && slices.Contains(cs.GetVoters(), uint64(id))
}

// hear records raft traffic from m's sender (see HeardWithin). Only members are recorded: a
// sender the membership does not list must not grow the map.
func (n *Node) hear(m *raftpb.Message) {
	switch m.GetType() {
	case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat, raftpb.MessageType_MsgSnap,
		raftpb.MessageType_MsgAppResp, raftpb.MessageType_MsgHeartbeatResp,
		raftpb.MessageType_MsgVoteResp, raftpb.MessageType_MsgPreVoteResp:
	default:
		return
	}
	id := membership.ID(m.GetFrom())
	if m.GetTerm() < n.term.Load() || id == membership.ID(n.id) || !n.lists(id, m) {
		return
	}
	n.heard.Store(id, heardAt{term: m.GetTerm(), at: time.Now()})
}

// ReportUnreachable tells raft a peer could not be reached.
func (n *Node) ReportUnreachable(id uint64) { n.raft.ReportUnreachable(id) }

// ReportSnapshot tells raft how sending a snapshot to a peer ended.
func (n *Node) ReportSnapshot(id uint64, ok bool) {
	status := raft.SnapshotFinish
	if !ok {
		status = raft.SnapshotFailure
	}
	n.raft.ReportSnapshot(id, status)
}

// ID is this member's ID.
func (n *Node) ID() membership.ID { return membership.ID(n.id) }

// Cluster is the applied membership. Do not modify it.
func (n *Node) Cluster() *membership.Cluster { return n.cluster.Load() }

// Leader is the current leader's ID, or zero.
func (n *Node) Leader() membership.ID { return membership.ID(n.lead.Load()) }

// Term is the current raft term.
func (n *Node) Term() uint64 { return n.term.Load() }

// Applied is the applied index.
func (n *Node) Applied() uint64 { return n.applied.Load() }

func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand never fails on Linux; if it does, nothing is safe
		}
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// NewMemberID returns a fresh random member ID; the membership rules refuse it at apply time
// in the unlikely case that it was ever used.
func NewMemberID() membership.ID { return membership.ID(randomID()) }

// LastIndex is the index of the last entry in this member's log.
func (n *Node) LastIndex() uint64 {
	i, _ := n.mem.LastIndex()
	return i
}
