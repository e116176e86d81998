package raftnode

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/crashpoint"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// appliedEntry is what applying one committed entry did.
type appliedEntry struct {
	entry *raftpb.Entry
	req   uint64
	err   error
}

// pass is one Ready once its committed entries are applied in memory: what to persist, and
// what to publish and answer once that is durable.
type pass struct {
	up       storage.Update
	received bool                // the leader sent a snapshot, which replaces the membership
	cluster  *membership.Cluster // after the snapshot and the committed entries
	applied  uint64
	lastTerm uint64 // of the last entry applied in this pass, or as before it
	results  []appliedEntry
	// recorded are the history events the applied changes added, for the leader's log.
	recorded []membership.Event
	// selfRemoved: this member's own removal was applied; the loop stops after this pass.
	selfRemoved bool
}

// changed reports whether the pass moved the membership or the applied index.
func (p *pass) changed() bool { return p.up.Cluster != nil }

// handleReady handles one Ready in the order docs/design.md ("The Ready loop") gives; each call
// below is one of its steps, and the order is what makes the loop safe: nothing is sent by a
// follower, published or answered before it is durable, and proposers hear only after Advance.
func (n *Node) handleReady(rd raft.Ready) error {
	n.noteReady(rd)
	n.recordState(rd)
	p, err := n.applyInMemory(rd)
	if err != nil {
		return err
	}
	if err := n.persist(p); err != nil {
		return err
	}
	if err := n.appendToMemory(rd, p); err != nil {
		return err
	}
	n.markLog()
	if err := n.send(rd.Messages); err != nil {
		return err
	}
	n.applyConfChanges(p.results)
	n.publishApplied(p)
	n.releaseReads(rd.ReadStates)
	if err := n.maybeSnapshot(); err != nil {
		return err
	}
	n.raft.Advance()
	n.answerProposers(p)
	if p.selfRemoved {
		n.stop() // Run returns ErrRemoved
	}
	return nil
}

// recordState records the term, then the leader. The term comes first: whoever sees this member
// as leader then sees its new term too.
func (n *Node) recordState(rd raft.Ready) {
	prevTerm := n.term.Load()
	moved := false
	if rd.HardState != nil {
		n.term.Store(rd.HardState.GetTerm())
		n.commit.Store(rd.HardState.GetCommit())
		moved = rd.HardState.GetTerm() != prevTerm
	}
	if rd.SoftState != nil {
		moved = moved || n.lead.Load() != rd.SoftState.Lead
		if rd.SoftState.Lead == n.id && n.lead.Load() != n.id {
			n.ledSince.Store(time.Now().UnixNano())
		}
		n.lead.Store(rd.SoftState.Lead)
		n.cfg.Metrics.ObserveLeader(rd.SoftState.Lead)
		n.notify(&n.progress)
	}
	if moved {
		n.notify(&n.leaderCh)
	}
}

// applyInMemory applies the received snapshot, then every committed entry above the applied
// index, to the membership, without publishing anything: readers see the result only once it
// is durable. Entries at or below the applied index are skipped, so a replayed log changes
// nothing.
func (n *Node) applyInMemory(rd raft.Ready) (*pass, error) {
	p := &pass{
		up:      storage.Update{HardState: rd.HardState, Entries: rd.Entries},
		cluster: n.cluster.Load(), applied: n.applied.Load(), lastTerm: n.appliedTerm.Load(),
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		c, err := storage.SnapshotCluster(rd.Snapshot)
		if err != nil {
			// Step refused every snapshot whose data is not a membership.
			return nil, fmt.Errorf("restoring snapshot %d: %w", rd.Snapshot.GetMetadata().GetIndex(), err)
		}
		md := rd.Snapshot.GetMetadata()
		p.up.Snapshot = rd.Snapshot
		p.up.ResetLog = true
		p.cluster, p.applied, p.lastTerm, p.received = c.WithMaxHistory(n.cfg.MaxHistory), md.GetIndex(), md.GetTerm(), true
	}
	for _, e := range rd.CommittedEntries {
		if e.GetIndex() <= p.applied {
			continue
		}
		if err := n.applyEntry(p, e); err != nil {
			return nil, err
		}
	}
	if len(p.results) > 0 || p.received {
		p.up.Cluster, p.up.Applied, p.up.Tombstone = p.cluster, p.applied, p.selfRemoved
		p.up.HistoryAdded = len(p.recorded)
	}
	return p, nil
}

// applyEntry applies one committed entry to p's membership and records what it did for its
// proposer.
func (n *Node) applyEntry(p *pass, e *raftpb.Entry) error {
	crashpoint.Hit(crashpoint.ApplyBefore)
	r := appliedEntry{entry: e}
	prop, err := proposalOf(e)
	if err != nil {
		return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
	}
	switch {
	case prop == nil:
		// A leader's first entry of its term, or, later in the term, a conf change that raft
		// refused to append and emptied: nothing to apply, but its proposer must hear.
		if e.GetType() == raftpb.EntryNormal && e.GetTerm() == p.lastTerm {
			r.err = ErrProposalLost
		}
	case prop.stale(e):
		r.req, r.err = prop.RequestID, ErrProposalLost
	default:
		r.req = prop.RequestID
		st := membership.Stamp{Index: e.GetIndex(), Term: e.GetTerm(), Time: prop.Time}
		p.cluster, r.err = p.cluster.ApplyRecorded(prop.Change, st, n.cfg.MaxHistory)
		if ev, ok := p.cluster.History.Last(); ok && r.err == nil {
			p.recorded = append(p.recorded, ev)
		}
		if r.err == nil && prop.Change.Kind == membership.KindRemove {
			p.up.Removed = append(p.up.Removed, prop.Change.Member.ID)
			p.selfRemoved = p.selfRemoved || uint64(prop.Change.Member.ID) == n.id
		}
	}
	p.results = append(p.results, r)
	p.applied, p.lastTerm = e.GetIndex(), e.GetTerm()
	return nil
}

// persist writes the pass in one bbolt transaction (see storage.Save): a crash leaves all of it
// or none of it.
func (n *Node) persist(p *pass) error {
	up := p.up
	// A pass that only carries messages (heartbeats, read-index answers) has nothing to make
	// durable: skip the transaction and its fsync.
	if up.HardState == nil && len(up.Entries) == 0 && up.Snapshot == nil && up.Cluster == nil {
		return nil
	}
	// bbolt's commit, with its fsync, is nearly all of Save's time: the transaction only puts
	// a few keys first.
	start := time.Now()
	crashpoint.Hit(crashpoint.RaftSaveBefore)
	crashpoint.HitIf(up.Cluster != nil, crashpoint.MembershipSaveBefore)
	if err := n.store.Save(up); err != nil {
		return fmt.Errorf("persisting raft state: %w", err)
	}
	crashpoint.Hit(crashpoint.RaftSaveAfter)
	crashpoint.HitIf(up.Cluster != nil, crashpoint.MembershipSaveAfter)
	n.cfg.Metrics.BackendCommit(time.Since(start))
	return nil
}

// appendToMemory hands the durable snapshot and entries to raft's
// MemoryStorage, and notes the last conf change appended, which LeaderTerm waits for.
func (n *Node) appendToMemory(rd raft.Ready, p *pass) error {
	if p.received {
		if err := n.mem.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		n.snapIndex = p.applied
	}
	if err := n.mem.Append(rd.Entries); err != nil {
		return err
	}
	for _, e := range rd.Entries {
		if e.GetType() == raftpb.EntryConfChange {
			n.lastConf.Store(&logPos{index: e.GetIndex(), term: e.GetTerm()})
		}
	}
	return nil
}

// applyConfChanges tells raft about each committed conf change, in order, so that raft's
// configuration stays that of the applied membership.
func (n *Node) applyConfChanges(results []appliedEntry) {
	for _, r := range results {
		if r.entry.GetType() != raftpb.EntryConfChange {
			continue
		}
		cc := &raftpb.ConfChange{}
		_ = proto.Unmarshal(r.entry.GetData(), cc) // decoded once in applyEntry already
		if r.err != nil {
			// Refused by the membership rules: raft must not change its configuration either.
			cc.NodeId = proto.Uint64(raft.None)
		}
		n.raft.ApplyConfChange(cc)
	}
}

// publishApplied makes the new membership and applied index visible to readers and to the
// transport (which learns the peers' addresses from it), and wakes whoever waits for them.
func (n *Node) publishApplied(p *pass) {
	if !p.changed() {
		return
	}
	n.cluster.Store(p.cluster)
	n.applied.Store(p.applied)
	n.appliedTerm.Store(p.lastTerm)
	n.cfg.Transport.SetPeers(p.cluster)
	n.notify(&n.progress)
	if n.lead.Load() == n.id {
		for _, ev := range p.recorded {
			n.logChange(ev)
		}
	}
}

// logChange is the leader's line for a change it applied, with etcd's style of keys.
func (n *Node) logChange(ev membership.Event) {
	attrs := []any{"change", ev.Change, "member-id", ev.MemberID.String(), "member-name", ev.Name,
		"member-peer-urls", ev.PeerURLs, "is-learner", ev.IsLearner, "raft-index", ev.RaftIndex, "raft-term", ev.Term}
	if !ev.Time.IsZero() {
		attrs = append(attrs, "proposed-at", ev.Time.Format(time.RFC3339Nano))
	}
	n.log.Info("membership changed", append(attrs, "by", ev.By.String())...)
}

// releaseReads hands each read index raft confirmed to the ReadIndex call waiting for it.
func (n *Node) releaseReads(states []raft.ReadState) {
	for _, rs := range states {
		n.mu.Lock()
		if ch, ok := n.reads[string(rs.RequestCtx)]; ok {
			ch <- rs.Index
			delete(n.reads, string(rs.RequestCtx))
		}
		n.mu.Unlock()
	}
}

// answerProposers runs after Advance. Proposers hear only now: raft counts entries as applied
// at Advance, and a conf change proposed before that would find the previous one still pending
// and be emptied.
func (n *Node) answerProposers(p *pass) {
	if p.received {
		// Whatever was pending may or may not be in the snapshot.
		n.failAll(ErrTimeout)
	}
	if p.changed() {
		n.finish(p.results, p.cluster)
	}
}

func (n *Node) send(msgs []*raftpb.Message) error {
	for i, m := range msgs {
		if m.GetType() == raftpb.MessageType_MsgSnap {
			fresh, err := n.currentSnapshot()
			if err != nil {
				return err
			}
			// raft's message stays as raft made it; the copy carries the data.
			c := proto.CloneOf(m)
			c.Snapshot = fresh
			msgs[i] = c
		}
	}
	n.cfg.Transport.Send(msgs)
	return nil
}

// maybeSnapshot takes a snapshot of the applied membership once SnapshotCount entries have been
// applied since the last one, and compacts the log behind it: the log, and a restart's replay of
// it, stay bounded.
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
	stored := &raftpb.Snapshot{Data: data, Metadata: snap.GetMetadata()}
	if err := n.store.Save(storage.Update{Snapshot: stored, CompactTo: compact}); err != nil {
		return fmt.Errorf("persisting snapshot: %w", err)
	}
	n.snapIndex = applied
	return nil
}

// currentSnapshot is the snapshot a leader sends in place of the one raft chose from its
// storage, as etcd sends its merged snapshot: the membership as applied now, with its index, term
// and configuration. The stored snapshot may predate the member it is sent to (a member added
// after it), and raft refuses a snapshot whose configuration does not include it; the applied
// state is always at least as new and always includes it.
func (n *Node) currentSnapshot() (*raftpb.Snapshot, error) {
	c := n.cluster.Load()
	data, err := storage.SnapshotData(c)
	if err != nil {
		return nil, err
	}
	return &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(n.applied.Load()), Term: proto.Uint64(n.appliedTerm.Load()), ConfState: storage.ConfState(c),
	}}, nil
}
