package raftnode

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/storage"
)

// raft trusts its peers: it panics on a message no raft could send (a term whose election would
// overflow, a commit beyond its log, an append that rewrites a committed entry, a response with
// nothing to answer) and persists what it took first, so one forged message stops a member for
// good. Step therefore refuses, before raft sees it, every message that raft could not survive
// or that raft never sends to a peer (absurd). The bounds on terms and indexes are storage's
// (MaxTerm, MaxIndex, MaxTermStep): ones no cluster reaches; the one on terms is counted from
// the term this member held at its start (termCeiling), never from one a peer sent.

// peerTypes are the message types raft sends to a peer. The others are raft's own, stepped
// only by the local node (MsgHup, MsgBeat, MsgCheckQuorum, MsgUnreachable, MsgSnapStatus,
// MsgForgetLeader, the MsgStorage* messages); MsgProp too, since proposal forwarding is off.
// MsgReadIndex and MsgTransferLeader are forwarded by a follower to its leader.
var peerTypes = map[raftpb.MessageType]bool{
	raftpb.MessageType_MsgApp: true, raftpb.MessageType_MsgAppResp: true,
	raftpb.MessageType_MsgVote: true, raftpb.MessageType_MsgVoteResp: true,
	raftpb.MessageType_MsgPreVote: true, raftpb.MessageType_MsgPreVoteResp: true,
	raftpb.MessageType_MsgSnap: true, raftpb.MessageType_MsgHeartbeat: true,
	raftpb.MessageType_MsgHeartbeatResp: true, raftpb.MessageType_MsgTransferLeader: true,
	raftpb.MessageType_MsgTimeoutNow: true, raftpb.MessageType_MsgReadIndex: true,
	raftpb.MessageType_MsgReadIndexResp: true,
}

// absurd returns why raft must not see m, or nil. It reads this member's state as the loop
// last recorded it (term, commit) and a bound on raft's log (logFloor): raft's own state may
// be a Ready ahead of the loop's.
func (n *Node) absurd(m *raftpb.Message) error {
	t := m.GetType()
	switch {
	case !peerTypes[t]:
		return fmt.Errorf("a %s never comes from a peer", t)
	case m.GetFrom() == 0 || m.GetFrom() == n.id:
		return fmt.Errorf("a %s from member %x, which is not a peer", t, m.GetFrom())
	case m.GetTerm() == 0 && t != raftpb.MessageType_MsgReadIndex:
		return fmt.Errorf("a %s without a term", t)
	case len(m.GetResponses()) > 0 || m.Vote != nil:
		return fmt.Errorf("a %s with a local message's fields", t)
	}
	if err := n.absurdTerm(m); err != nil {
		return err
	}
	for _, i := range []uint64{m.GetIndex(), m.GetCommit(), m.GetRejectHint(), m.GetSnapshot().GetMetadata().GetIndex()} {
		if i > storage.MaxIndex {
			return fmt.Errorf("a %s with index %d, beyond any log (%d)", t, i, uint64(storage.MaxIndex))
		}
	}
	// raft takes the log and commit of an append or heartbeat only at this member's term or a
	// later one; an earlier leader's, which it ignores, may name what this member since dropped.
	current := m.GetTerm() >= n.term.Load()
	switch t {
	case raftpb.MessageType_MsgApp:
		return n.absurdAppend(m, current)
	case raftpb.MessageType_MsgHeartbeat:
		// raft commits what a heartbeat says, and panics past its log's end (raftLog.commitTo).
		// A leader commits on a follower no more than the follower acknowledged, and sends an
		// append only from past that: never past logFloor.
		if current && m.GetCommit() > n.logFloor {
			return fmt.Errorf("a heartbeat commits index %d, beyond this member's log (%d)", m.GetCommit(), n.logFloor)
		}
	case raftpb.MessageType_MsgReadIndex, raftpb.MessageType_MsgReadIndexResp:
		// raft reads the request's context from its one entry.
		if len(m.GetEntries()) != 1 {
			return fmt.Errorf("a %s with %d entries, not 1", t, len(m.GetEntries()))
		}
		return nil
	case raftpb.MessageType_MsgSnap:
		return absurdSnapshot(m)
	}
	if len(m.GetEntries()) > 0 {
		return fmt.Errorf("a %s with entries", t)
	}
	return nil
}

// absurdTerm refuses a term past termCeiling, and a log term above the message's own: raft's log
// holds no entry of a term after its current one.
func (n *Node) absurdTerm(m *raftpb.Message) error {
	term := m.GetTerm()
	if term > storage.MaxTerm {
		return fmt.Errorf("a %s of term %d, past any term a cluster reaches (2^63)", m.GetType(), term)
	}
	if c := n.termCeiling(); term > c {
		return fmt.Errorf("a %s of term %d, past %d: this member's term at its start (%d) plus 2^32 plus one an election timeout since",
			m.GetType(), term, c, n.termBase)
	}
	if m.GetLogTerm() > term && m.GetType() != raftpb.MessageType_MsgReadIndex {
		return fmt.Errorf("a %s of term %d names log term %d", m.GetType(), term, m.GetLogTerm())
	}
	return nil
}

// termCeiling is the highest term a peer's message may carry: the term this member held when the
// process started (New), plus storage.MaxTermStep, plus one an election timeout since. Nothing a
// peer sends moves it, so no run of accepted messages raises the term by more than that in one
// life of the process; a term rises by one an election, and with pre-vote only at a real one,
// so a member that was away while its peers held 2^32 elections is the only one the step
// refuses (docs/design.md, "What raft could not survive").
func (n *Node) termCeiling() uint64 {
	timeout := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
	return n.termBase + storage.MaxTermStep + uint64(time.Since(n.termSince)/timeout)
}

// absurdAppend refuses an append whose entries do not follow its index one by one (raft's
// maybeAppend panics on one that rewrites a committed entry, `conflict with committed entry`,
// and on one whose entries start before it), with non-decreasing terms between its log term
// and its own term, or, of the current term or a later one, that rewrites an entry the loop
// recorded committed. No leader sends that last one; raft would not panic on it:
// handleAppendEntries answers an append after an index below its commit with that commit,
// and appends nothing, so the entries of one that passes here are all above raft's commit,
// even where raft's commit is a Ready ahead of the loop's.
func (n *Node) absurdAppend(m *raftpb.Message, current bool) error {
	ents := m.GetEntries()
	if uint64(len(ents)) > storage.MaxIndex-m.GetIndex() {
		return fmt.Errorf("an append of %d entries after index %d", len(ents), m.GetIndex())
	}
	prev := m.GetLogTerm()
	for i, e := range ents {
		if e.GetIndex() != m.GetIndex()+uint64(i)+1 {
			return fmt.Errorf("an append after index %d whose entry %d has index %d", m.GetIndex(), i, e.GetIndex())
		}
		if e.GetTerm() < prev || e.GetTerm() > m.GetTerm() {
			return fmt.Errorf("an append of term %d with entry %d of term %d after term %d", m.GetTerm(), e.GetIndex(), e.GetTerm(), prev)
		}
		prev = e.GetTerm()
	}
	if !current {
		return nil
	}
	committed := n.commit.Load()
	for _, e := range ents {
		if e.GetIndex() > committed {
			break
		}
		if t, err := n.mem.Term(e.GetIndex()); err == nil && t != e.GetTerm() {
			return fmt.Errorf("an append rewrites committed entry %d (term %d) with term %d", e.GetIndex(), t, e.GetTerm())
		}
	}
	return nil
}

// absurdSnapshot refuses a snapshot of a term after the message's, or whose configuration
// raft cannot restore (ConfState). That the configuration is the membership the data holds is
// checked with the data (snapshotUnfit).
func absurdSnapshot(m *raftpb.Message) error {
	md := m.GetSnapshot().GetMetadata()
	if md.GetTerm() > m.GetTerm() || md.GetTerm() == 0 || md.GetIndex() == 0 {
		return fmt.Errorf("a snapshot at index %d of term %d sent in term %d", md.GetIndex(), md.GetTerm(), m.GetTerm())
	}
	if len(m.GetEntries()) > 0 {
		return fmt.Errorf("a snapshot with entries")
	}
	return nil
}

// snapshotUnfit refuses a snapshot whose data is not a membership, which the member could not
// apply, or whose configuration is not the membership's: raft restores the configuration the
// metadata names, and panics on one it cannot.
func snapshotUnfit(s *raftpb.Snapshot) error {
	c, err := storage.SnapshotCluster(s)
	if err != nil {
		return err
	}
	if !sameConf(s.GetMetadata().GetConfState(), storage.ConfState(c)) {
		return fmt.Errorf("snapshot at %d: its configuration is not its membership's", s.GetMetadata().GetIndex())
	}
	return nil
}

// sameConf reports whether two configurations name the same voters and learners, neither
// joint.
func sameConf(a, b *raftpb.ConfState) bool {
	set := func(ids []uint64) []uint64 {
		s := slices.Clone(ids)
		slices.Sort(s)
		return s
	}
	return slices.Equal(set(a.GetVoters()), set(b.GetVoters())) && slices.Equal(set(a.GetLearners()), set(b.GetLearners())) &&
		len(a.GetVotersOutgoing())+len(a.GetLearnersNext())+len(b.GetVotersOutgoing())+len(b.GetLearnersNext()) == 0 &&
		!a.GetAutoLeave() && !b.GetAutoLeave()
}

// logStepped lowers logFloor to where m, of the current term or a later one, may leave raft's
// log ending: an append's last entry, which raft truncates to on a conflict, or a snapshot's
// index, which raft restores. Raft's own entries past logHigh are at most the one a leader
// appends as it is elected, once a term, and more only while this member is known to lead; so
// a message of the recorded term ending past logHigh cannot lower raft's last index, and is
// not counted: a leader's appends, sent one after another, pass. Called with stepMu held.
func (n *Node) logStepped(m *raftpb.Message) {
	term := n.term.Load()
	if m.GetTerm() < term {
		return
	}
	var end uint64
	switch {
	case m.GetType() == raftpb.MessageType_MsgApp && len(m.GetEntries()) > 0:
		end = m.GetIndex() + uint64(len(m.GetEntries()))
	case m.GetType() == raftpb.MessageType_MsgSnap:
		end = m.GetSnapshot().GetMetadata().GetIndex()
	default:
		return
	}
	if end <= n.logHigh || m.GetTerm() > term || n.lead.Load() == n.id {
		n.logFloor, n.recentEnd = min(n.logFloor, end), min(n.recentEnd, end)
	}
	n.logHigh = max(n.logHigh, end)
}

// noteReady raises logHigh to the end of a Ready's entries or snapshot before the loop records
// who leads: a leader's own entries are in raft's log before any Ready holds them, and a
// message stepped meanwhile counts since the member is still known to lead.
func (n *Node) noteReady(rd raft.Ready) {
	end := rd.Snapshot.GetMetadata().GetIndex()
	if len(rd.Entries) > 0 {
		end = rd.Entries[len(rd.Entries)-1].GetIndex()
	}
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	n.logHigh = max(n.logHigh, end)
}

// markLog sets logFloor once the loop holds a Ready in its memory log. Raft built that Ready
// after every message whose step returned before the loop took it; one stepped since can lower
// raft's last index only to its end, counted in recentEnd since the last mark, which was before
// the loop took the Ready.
func (n *Node) markLog() {
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	n.logFloor, n.recentEnd = min(n.LastIndex(), n.recentEnd), math.MaxUint64
	n.logHigh = max(n.logHigh, n.LastIndex())
}

// refused counts a message refused at Step and returns err as an ErrRefused.
func (n *Node) refused(err error) error {
	n.cfg.Metrics.PeerRefused()
	if errors.Is(err, ErrRefused) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrRefused, err)
}

// absurdStoredTerm refuses to start on a term past storage.MaxTerm: raft would panic at the
// member's next campaign, as it did on the forged message that put it there. The one line says
// how to recover (docs/runbooks/absurd-term.md).
func absurdStoredTerm(st *storage.State) error {
	if t := st.HardState.GetTerm(); t > storage.MaxTerm {
		return fmt.Errorf("the stored raft term %d is past any term a cluster reaches (2^63), set by a forged peer message; "+
			"with this member stopped, run clusterctl datadir reset-term on its --data-dir", t)
	}
	return nil
}
