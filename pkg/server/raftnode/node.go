package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

var (
	// ErrRemoved ends Run when this member applied its own removal or a peer told it that it
	// had been removed. It ends the process, never an RPC, so it is not in the registry.
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
	Logger        *slog.Logger
}

// proposal is what a membership change entry carries: in the Data of a normal entry, in the
// Context of a conf change. Stored in the raft log: field names are part of the format.
type proposal struct {
	RequestID uint64 `json:"requestID"`
	// Term is the leader term in which the change was checked; zero for changes that no leader
	// checked (a forced removal). A change appended in another term is not applied: the
	// membership it was checked against may have moved on since (see Propose).
	Term   uint64            `json:"term,omitempty"`
	Change membership.Change `json:"change"`
}

type logPos struct{ index, term uint64 }

type result struct {
	cluster *membership.Cluster
	err     error
}

// appliedEntry is what applying one committed entry did.
type appliedEntry struct {
	entry *raftpb.Entry
	req   uint64
	err   error
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
	// lastConf is where the latest conf-change entry was appended to this member's log.
	lastConf  atomic.Pointer[logPos]
	snapIndex uint64 // only the loop touches it

	mu       sync.Mutex
	waiters  map[uint64]*waiter
	reads    map[string]chan uint64
	progress chan struct{} // closed and replaced whenever applied advances or the leader changes

	confMu  sync.Mutex // one membership change in flight
	removed chan struct{}
	rmOnce  sync.Once
	// toldRemoved: a peer, not an applied entry, said this member is removed; Run writes the
	// tombstone then, since only the loop may write to the store and only while it is open.
	toldRemoved atomic.Bool
	done        chan struct{}
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
		waiters:   map[uint64]*waiter{}, reads: map[string]chan uint64{},
		progress: make(chan struct{}), removed: make(chan struct{}), done: make(chan struct{}),
	}
	n.cluster.Store(st.Cluster)
	n.applied.Store(st.Applied)
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
	defer close(n.done)
	defer n.raft.Stop()
	// Proposals still waiting were made: whether they apply is unknown.
	defer n.failAll(ErrTimeout)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.removed:
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

func (n *Node) handleReady(rd raft.Ready) error {
	prevTerm := n.term.Load()
	// The term before the leader: whoever sees this member as leader then sees its term too.
	if rd.HardState != nil {
		n.term.Store(rd.HardState.GetTerm())
	}
	if rd.SoftState != nil {
		n.lead.Store(rd.SoftState.Lead)
		n.notifyProgress()
	}
	cluster := n.cluster.Load()
	applied := n.applied.Load()
	up := storage.Update{HardState: rd.HardState, Entries: rd.Entries}
	var received bool
	if !raft.IsEmptySnap(rd.Snapshot) {
		c, err := storage.SnapshotCluster(rd.Snapshot)
		if err != nil {
			return err
		}
		up.Snapshot, up.ResetLog = rd.Snapshot, true
		cluster, applied, received = c, rd.Snapshot.GetMetadata().GetIndex(), true
	}

	var results []appliedEntry
	var removed []membership.ID
	selfRemoved := false
	lastTerm := n.appliedTerm.Load()
	for _, e := range rd.CommittedEntries {
		if e.GetIndex() <= applied {
			continue
		}
		r := appliedEntry{entry: e}
		p, err := proposalOf(e)
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
		}
		switch {
		case p == nil:
			// A leader's first entry of its term, or, later in the term, a conf change that raft
			// refused to append and emptied: nothing to apply, but its proposer must hear.
			if e.GetType() == raftpb.EntryNormal && e.GetTerm() == lastTerm {
				r.err = ErrProposalLost
			}
		case p.stale(e):
			r.req, r.err = p.RequestID, ErrProposalLost
		default:
			r.req = p.RequestID
			cluster, r.err = cluster.Apply(p.Change)
			if r.err == nil && p.Change.Kind == membership.KindRemove {
				removed = append(removed, p.Change.Member.ID)
				selfRemoved = selfRemoved || uint64(p.Change.Member.ID) == n.id
			}
		}
		results = append(results, r)
		applied, lastTerm = e.GetIndex(), e.GetTerm()
	}
	if len(results) > 0 || received {
		up.Cluster, up.Removed, up.Applied, up.Tombstone = cluster, removed, applied, selfRemoved
	}
	// A leader writes to its disk while its followers write to theirs (raft thesis 10.2.1):
	// its messages carry only entries it has appended, and raft counts the leader's own copy
	// towards the commit only after Advance, once the write below is done. Other members
	// must not answer (votes, appends) before their state is durable, nor may a leader whose
	// term is new in this pass (a lone voter elects itself at once).
	leading := n.lead.Load() == n.id && (rd.HardState == nil || rd.HardState.GetTerm() == prevTerm)
	if leading {
		if err := n.send(rd.Messages); err != nil {
			return err
		}
	}
	// A pass that only carries messages (heartbeats, read-index answers) has nothing to make
	// durable: skip the transaction and its fsync.
	if up.HardState != nil || len(up.Entries) > 0 || up.Snapshot != nil || up.Cluster != nil {
		if err := n.store.Save(up); err != nil {
			return fmt.Errorf("persisting raft state: %w", err)
		}
	}

	if received {
		if err := n.mem.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		n.snapIndex = applied
	}
	if err := n.mem.Append(rd.Entries); err != nil {
		return err
	}
	for _, e := range rd.Entries {
		if e.GetType() == raftpb.EntryConfChange {
			n.lastConf.Store(&logPos{index: e.GetIndex(), term: e.GetTerm()})
		}
	}
	if !leading {
		if err := n.send(rd.Messages); err != nil {
			return err
		}
	}

	for _, r := range results {
		if r.entry.GetType() == raftpb.EntryConfChange {
			cc := &raftpb.ConfChange{}
			_ = proto.Unmarshal(r.entry.GetData(), cc) // decoded once above already
			if r.err != nil {
				// Refused by the membership rules: raft must not change its configuration either.
				cc.NodeId = proto.Uint64(raft.None)
			}
			n.raft.ApplyConfChange(cc)
		}
	}
	if up.Cluster != nil {
		n.cluster.Store(cluster)
		n.applied.Store(applied)
		n.appliedTerm.Store(lastTerm)
		n.cfg.Transport.SetPeers(cluster)
		n.notifyProgress()
	}
	for _, rs := range rd.ReadStates {
		n.mu.Lock()
		if ch, ok := n.reads[string(rs.RequestCtx)]; ok {
			ch <- rs.Index
			delete(n.reads, string(rs.RequestCtx))
		}
		n.mu.Unlock()
	}
	if err := n.maybeSnapshot(); err != nil {
		return err
	}
	n.raft.Advance()
	// Proposers hear only now: raft counts entries as applied at Advance, and a conf change
	// proposed before that would find the previous one still pending and be emptied.
	if received {
		// Whatever was pending may or may not be in the snapshot.
		n.failAll(ErrTimeout)
	}
	if up.Cluster != nil {
		n.finish(results, cluster)
	}
	if selfRemoved {
		n.markRemoved()
	}
	return nil
}

// send hands messages to the transport, each snapshot rewritten to the applied membership.
func (n *Node) send(msgs []*raftpb.Message) error {
	for i, m := range msgs {
		if m.GetType() == raftpb.MessageType_MsgSnap {
			fresh, err := n.currentSnapshot(m.GetSnapshot())
			if err != nil {
				return err
			}
			m = proto.CloneOf(m)
			m.Snapshot = fresh
			msgs[i] = m
		}
	}
	n.cfg.Transport.Send(msgs)
	return nil
}

// finish answers the proposers of the applied entries, and fails those whose proposals can no
// longer be applied: once an entry of a later term is applied, every entry of an earlier term
// that will ever commit has committed.
func (n *Node) finish(results []appliedEntry, c *membership.Cluster) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range results {
		if w, ok := n.waiters[r.req]; ok && r.req != 0 {
			w.ch <- result{cluster: c, err: r.err}
			delete(n.waiters, r.req)
		}
		for id, w := range n.waiters {
			dropped := r.req == 0 && errors.Is(r.err, ErrProposalLost) && w.term == r.entry.GetTerm()
			if dropped || w.term < r.entry.GetTerm() {
				w.ch <- result{err: ErrProposalLost}
				delete(n.waiters, id)
			}
		}
	}
}

func (n *Node) failAll(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, w := range n.waiters {
		w.ch <- result{err: err}
		delete(n.waiters, id)
	}
}

// notifyProgress wakes everyone waiting for the applied index or the leader to change.
func (n *Node) notifyProgress() {
	n.mu.Lock()
	close(n.progress)
	n.progress = make(chan struct{})
	n.mu.Unlock()
}

func (n *Node) progressCh() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.progress
}

// waitFor blocks until cond holds, ctx ends (false), or the node stops (false).
func (n *Node) waitFor(ctx context.Context, cond func() bool) bool {
	for {
		ch := n.progressCh()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-n.done:
			return false
		}
	}
}

func (n *Node) maybeSnapshot() error {
	applied := n.applied.Load()
	if applied-n.snapIndex < n.cfg.SnapshotCount {
		return nil
	}
	c := n.cluster.Load()
	data, err := storage.SnapshotData(c)
	if err != nil {
		return err
	}
	snap, err := n.mem.CreateSnapshot(applied, storage.ConfState(c), data)
	if err != nil {
		return err
	}
	// Keep some entries behind the snapshot so that a follower slightly behind catches up from
	// the log rather than from a whole snapshot.
	keep := min(n.cfg.SnapshotCount, 5000)
	compact := uint64(0)
	if applied > keep {
		compact = applied - keep
		// Compacted already up to there by an earlier snapshot: nothing to do.
		if err := n.mem.Compact(compact); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return err
		}
	}
	if err := n.store.Save(storage.Update{Snapshot: snap, CompactTo: compact}); err != nil {
		return fmt.Errorf("persisting snapshot: %w", err)
	}
	n.snapIndex = applied
	return nil
}

// currentSnapshot replaces the snapshot raft chose to send with one of the membership as
// applied now. The stored snapshot may predate the member it is sent to (a member added after
// it), and raft refuses a snapshot whose configuration does not include it; the applied state is
// always at least as new and always includes it.
func (n *Node) currentSnapshot(old *raftpb.Snapshot) (*raftpb.Snapshot, error) {
	applied := n.applied.Load()
	if applied <= old.GetMetadata().GetIndex() {
		return old, nil
	}
	c := n.cluster.Load()
	data, err := storage.SnapshotData(c)
	if err != nil {
		return nil, err
	}
	return &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(applied), Term: proto.Uint64(n.appliedTerm.Load()), ConfState: storage.ConfState(c),
	}}, nil
}

// ChangeOf returns the membership change applying the entry attempts, if any: the rules the
// Ready loop applies by, for code that replays a log without it (forcing a new cluster).
func ChangeOf(e *raftpb.Entry) (membership.Change, bool) {
	p, err := proposalOf(e)
	if err != nil || p == nil || p.stale(e) {
		return membership.Change{}, false
	}
	return p.Change, true
}

// proposalOf decodes the proposal an entry carries: nil for a normal entry with none (a
// leader's empty entry, or a conf change raft emptied).
func proposalOf(e *raftpb.Entry) (*proposal, error) {
	data := e.GetData()
	switch e.GetType() {
	case raftpb.EntryConfChange:
		cc := &raftpb.ConfChange{}
		if err := proto.Unmarshal(data, cc); err != nil {
			return nil, err
		}
		if data = cc.GetContext(); len(data) == 0 {
			// Every conf change this package makes carries its proposal, and raft would apply
			// one without it to its configuration but not to the membership.
			return nil, errors.New("conf change without a proposal")
		}
	case raftpb.EntryNormal:
	default:
		return nil, fmt.Errorf("unexpected entry type %v", e.GetType())
	}
	if len(data) == 0 {
		return nil, nil
	}
	return decodeProposal(data)
}

// stale reports whether the proposal was appended in another term than the one its change was
// checked in; such a change is never applied. Deterministic on every member and on replay:
// the entry's term is in the log.
func (p *proposal) stale(e *raftpb.Entry) bool {
	return p.Term != 0 && p.Term != e.GetTerm()
}

// RemovalEntry is the conf-change entry that removes id, as a proposal would have made it.
func RemovalEntry(id membership.ID, index, term uint64) (*raftpb.Entry, error) {
	ch := membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: id}}
	ctx, err := json.Marshal(proposal{Change: ch})
	if err != nil {
		return nil, err
	}
	data, err := proto.Marshal(&raftpb.ConfChange{
		Type: confChangeType(ch).Enum(), NodeId: proto.Uint64(uint64(id)), Context: ctx,
	})
	if err != nil {
		return nil, err
	}
	return &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(index), Term: proto.Uint64(term), Data: data}, nil
}

func decodeProposal(data []byte) (*proposal, error) {
	p := &proposal{}
	if err := json.Unmarshal(data, p); err != nil {
		return nil, err
	}
	return p, nil
}

// LeaderTerm waits until this member is the leader and its applied membership holds every
// conf change in its log, and returns its term. Called under ConfLock, the membership then
// stays as it is until the caller's own change: a check made against it cannot race with a
// change an earlier leader left in the log, nor with one of this leader's that is in its log
// but whose proposer gave up waiting (a proposer waits for seconds; its change reaches the log
// within one pass of the loop). Without a leader elsewhere it returns ErrNotLeader.
func (n *Node) LeaderTerm(ctx context.Context) (uint64, error) {
	if n.lead.Load() != n.id {
		return 0, ErrNotLeader
	}
	term := n.term.Load()
	settled := func() bool {
		// An applied entry of its own term means every entry of earlier terms is applied; raft
		// would, until then, also turn a conf change into an empty entry. Conf changes of its
		// own term it appended itself, and its log keeps them while it leads.
		if n.appliedTerm.Load() < term {
			return false
		}
		last := n.lastConf.Load()
		return last == nil || last.term != term || n.applied.Load() >= last.index
	}
	if !n.waitFor(ctx, func() bool { return settled() || n.lead.Load() != n.id }) {
		return 0, n.ctxErr(ctx)
	}
	if n.lead.Load() != n.id || n.term.Load() != term {
		return 0, ErrNotLeader
	}
	return term, nil
}

// Propose makes ch through raft and returns the membership once it is applied. term is what
// LeaderTerm returned before ch was checked: if leadership moved since, ch is not proposed
// (ErrNotLeader), and if it moves before ch is appended, ch is not applied (ErrProposalLost).
// Membership changes other than a publish must be made under ConfLock.
func (n *Node) Propose(ctx context.Context, term uint64, ch membership.Change) (*membership.Cluster, error) {
	if n.lead.Load() != n.id || n.term.Load() != term {
		return nil, ErrNotLeader
	}
	req := randomID()
	data, err := json.Marshal(proposal{RequestID: req, Term: term, Change: ch})
	if err != nil {
		return nil, err
	}
	w := &waiter{term: term, ch: make(chan result, 1)}
	n.mu.Lock()
	n.waiters[req] = w
	n.mu.Unlock()
	if ch.Kind == membership.KindPublish {
		err = n.raft.Propose(ctx, data)
	} else {
		err = n.raft.ProposeConfChange(ctx, &raftpb.ConfChange{
			Type: confChangeType(ch).Enum(), NodeId: proto.Uint64(uint64(ch.Member.ID)), Context: data,
		})
	}
	if err != nil {
		n.forget(req)
		if errors.Is(err, raft.ErrProposalDropped) {
			return nil, ErrProposalLost
		}
		return nil, n.ctxErr(ctx)
	}
	select {
	case r := <-w.ch:
		return r.cluster, r.err
	case <-ctx.Done():
		n.forget(req)
		return nil, ErrTimeout
	case <-n.done:
		// The proposal was made before the node stopped: its outcome is unknown.
		return nil, ErrTimeout
	}
}

func confChangeType(ch membership.Change) raftpb.ConfChangeType {
	switch ch.Kind {
	case membership.KindAdd:
		if ch.Member.IsLearner {
			return raftpb.ConfChangeType_ConfChangeAddLearnerNode
		}
		return raftpb.ConfChangeType_ConfChangeAddNode
	case membership.KindRemove:
		return raftpb.ConfChangeType_ConfChangeRemoveNode
	case membership.KindPromote:
		return raftpb.ConfChangeType_ConfChangeAddNode
	}
	return raftpb.ConfChangeType_ConfChangeUpdateNode
}

func (n *Node) forget(req uint64) {
	n.mu.Lock()
	delete(n.waiters, req)
	n.mu.Unlock()
}

func (n *Node) ctxErr(ctx context.Context) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	if n.lead.Load() == raft.None {
		return ErrNoLeader
	}
	return ErrTimeout
}

// ConfLock serialises membership changes on this member: raft cannot have two in flight.
func (n *Node) ConfLock() func() {
	n.confMu.Lock()
	return n.confMu.Unlock
}

// ReadIndex returns the membership as of a linearizable read: everything committed before the
// call is in it.
func (n *Node) ReadIndex(ctx context.Context) (*membership.Cluster, error) {
	retry := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval / 2
	for {
		if _, err := n.WaitLeader(ctx); err != nil {
			return nil, err
		}
		rctx := binary.BigEndian.AppendUint64(nil, randomID())
		ch := make(chan uint64, 1)
		n.mu.Lock()
		n.reads[string(rctx)] = ch
		n.mu.Unlock()
		if err := n.raft.ReadIndex(ctx, rctx); err != nil {
			n.forgetRead(rctx)
			return nil, n.ctxErr(ctx)
		}
		timer := time.NewTimer(retry)
		select {
		case idx := <-ch:
			timer.Stop()
			if !n.waitFor(ctx, func() bool { return n.applied.Load() >= idx }) {
				return nil, n.ctxErr(ctx)
			}
			return n.cluster.Load(), nil
		case <-timer.C:
			// raft drops a read request silently when leadership moves; ask again.
			n.forgetRead(rctx)
		case <-ctx.Done():
			timer.Stop()
			n.forgetRead(rctx)
			return nil, n.ctxErr(ctx)
		case <-n.done:
			timer.Stop()
			return nil, ErrStopped
		}
	}
}

func (n *Node) forgetRead(rctx []byte) {
	n.mu.Lock()
	delete(n.reads, string(rctx))
	n.mu.Unlock()
}

// TransferLeadership hands leadership to another voter and waits until it has it.
func (n *Node) TransferLeadership(ctx context.Context, to membership.ID) error {
	n.raft.TransferLeadership(ctx, n.id, uint64(to))
	if !n.waitFor(ctx, func() bool { return n.lead.Load() == uint64(to) }) {
		return n.ctxErr(ctx)
	}
	return nil
}

// MarkRemoved records that a peer refused this member as removed, and stops it. It may be
// called from any goroutine, any number of times, also after Run has returned: it only asks
// Run to write the tombstone and return.
func (n *Node) MarkRemoved() {
	n.toldRemoved.Store(true)
	n.markRemoved()
}

func (n *Node) markRemoved() { n.rmOnce.Do(func() { close(n.removed) }) }

// Step hands a message from a peer to raft.
func (n *Node) Step(ctx context.Context, m *raftpb.Message) error { return n.raft.Step(ctx, m) }

// PeerStarted is told that a peer has just started. A leader treats it as the peer's answer to
// a heartbeat, which is what raft waits for before it sends a peer it could not reach its next
// append: the peer is reached now instead of at the next heartbeat. Only a leader of the term
// steps it; raft ignores it anywhere else, and it carries no read-index context.
func (n *Node) PeerStarted(id uint64) {
	if n.lead.Load() != n.id || id == n.id {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = n.raft.Step(ctx, &raftpb.Message{
		Type: raftpb.MessageType_MsgHeartbeatResp.Enum(), From: proto.Uint64(id), To: proto.Uint64(n.id),
		Term: proto.Uint64(n.term.Load()),
	})
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

// Status is raft's status; its Progress is filled on the leader only.
func (n *Node) Status() raft.Status { return n.raft.Status() }

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

// WaitLeader returns the leader, waiting for an election if there is none: at most an
// election timeout, and at most three quarters of what is left of ctx, so that a member
// without a leader answers ErrNoLeader (nothing was proposed) before its caller gives up.
func (n *Node) WaitLeader(ctx context.Context) (membership.ID, error) {
	limit := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)*3/4)
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if !n.waitFor(wctx, func() bool { return n.lead.Load() != raft.None }) {
		if ctx.Err() == nil && n.lead.Load() == raft.None {
			return 0, ErrNoLeader
		}
		return 0, n.ctxErr(ctx)
	}
	return n.Leader(), nil
}

// LastIndex is the index of the last entry in this member's log.
func (n *Node) LastIndex() uint64 {
	i, _ := n.mem.LastIndex()
	return i
}
