// Package raftnode runs the raft Ready loop and is the only user of raft.Node.
//
// One pass of the loop, in the order the raft package documents:
//
//  1. persist: the received snapshot, the HardState and the new entries, together with the
//     membership the committed entries produce and the applied index, in one bbolt
//     transaction (storage.Save);
//  2. hand the snapshot and entries to raft's MemoryStorage;
//  3. send the messages (only now: a follower must not acknowledge what is not durable; the
//     leader of an unchanged term sends before step 1, writing in parallel with its followers);
//  4. apply: tell raft about each conf change (ApplyConfChange, with NodeId 0 for a change the
//     membership rules refused), publish the new membership, and answer the waiting proposers;
//  5. take a snapshot every SnapshotCount entries and compact the log;
//  6. Advance.
//
// Invariants:
//   - Committed entries at or below the applied index are never applied again, so a restart
//     that replays the log changes nothing.
//   - raft's configuration equals the voters and learners of the applied membership; that is
//     what a restart hands back to raft (confState), so no ConfState is stored on its own.
//   - Only the leader proposes, one membership change at a time (proposal forwarding is off),
//     and only once its applied membership holds every conf change in its log (LeaderTerm),
//     so raft never silently turns a change into an empty entry; if it ever does, or the proposal is lost to a new leader,
//     the waiter is told (ErrProposalLost) instead of waiting for a timeout.
//   - Only the loop writes to the store, and only while Run runs: a removal a peer reports
//     (MarkRemoved, from any goroutine, even after Run returned) is written as a tombstone by
//     the loop on its way out, never into a store already closed.
package raftnode
