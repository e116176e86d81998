// Package raftnode runs the raft Ready loop and is the only user of raft.Node.
//
// One pass of the loop (handleReady, in ready.go), in the order docs/design.md ("The Ready
// loop") gives, one function a step:
//
//  1. recordState: the term, then the leader (noteReady first: the Ready's log end, for Step's
//     check of heartbeats);
//  2. applyInMemory: the received snapshot, then the committed entries above the applied index,
//     applied to the membership, which nobody sees yet;
//  3. persist: the received snapshot, the HardState and the new entries, together with the
//     membership the committed entries produce and the applied index, in one bbolt
//     transaction (storage.Save);
//  4. appendToMemory: the snapshot and entries to raft's MemoryStorage, then markLog: the
//     bound on raft's log end that Step checks a heartbeat against;
//  5. send the messages (only now: no member acknowledges or votes on what is not durable);
//  6. applyConfChanges: ApplyConfChange for each conf change, with NodeId 0 for a change the
//     membership rules refused;
//  7. publishApplied and releaseReads: the new membership to readers and the transport, the
//     read indexes to their waiters;
//  8. maybeSnapshot: a snapshot every SnapshotCount entries, and the log compacted;
//  9. Advance, and only then answerProposers.
//
// ForceNewCluster rewrites a member's stored log before a node is built from it; it replays and
// writes entries by the same rules as the loop (proposal.go), which is why it lives here.
//
// Invariants:
//   - Committed entries at or below the applied index are never applied again, so a restart
//     that replays the log changes nothing.
//   - raft's configuration equals the voters and learners of the applied membership; that is
//     what a restart hands back to raft (restartStorage), so no ConfState is stored on its own.
//   - Only the leader proposes, one membership change at a time (proposal forwarding is off),
//     and only once its applied membership holds every conf change in its log (LeaderTerm),
//     so raft never silently turns a change into an empty entry; if it ever does, or the
//     proposal is lost to a new leader, the waiter is told (ErrProposalLost) instead of
//     waiting for a timeout.
//   - Only the loop writes to the store, and only while Run runs: a removal the cluster confirmed
//     (MarkRemoved, from any goroutine, even after Run returned) is written as a tombstone by
//     the loop on its way out, never into a store already closed.
//   - Nothing but raft's own messages, as their senders sent them, is stepped into raft, and
//     nothing is held back, stripped or asked for for its side effect. A snapshot whose data is
//     not a membership, or an append with an entry that is not a proposal, is refused at Step
//     (ErrRefused), before raft takes it. Liveness (HeardWithin) is read off those messages
//     alone, of the current term, and ends at once when the transport reports the connection
//     lost (PeerLost). ForceNewCluster writes before the node exists.
//   - Nothing a peer sends makes raft panic, now or at a later campaign: Step refuses, before raft
//     sees it, what raft could not survive or never sends to a peer (sane.go: a term past
//     storage.MaxTerm or past termCeiling, a local type, an index past storage.MaxIndex, an
//     append that does not follow its index or rewrites an entry recorded committed, a commit
//     past where raft's log may end (logFloor: the memory log's end, or lower where a message
//     stepped since the loop last took a Ready may have cut raft's log; logHigh says which
//     could), a snapshot whose
//     configuration is not its membership's), counted (PeerRefused). The check and the step of
//     one message are one (stepMu). Nothing recovers a panic at the step. A stored term past
//     storage.MaxTerm is refused by New, naming clusterctl datadir reset-term.
//   - No run of peer messages ratchets the term: termCeiling is the term stored when New ran
//     plus storage.MaxTermStep plus one an election timeout since, fixed by the clock alone, and
//     the term never passes it by more than this member's one campaign above it.
//   - Nothing of raft's own types leaves the package but messages and entries: callers ask
//     the questions they need answered (Matches, LeaderTerm, ReadIndex), not for raft.Status.
//   - A snapshot sent to a peer is the applied membership with its own index and term, as
//     etcd's merged snapshot is (currentSnapshot): never an older one.
//   - Nothing here exits the process: raft's Fatal panics, as its Panic does.
package raftnode
