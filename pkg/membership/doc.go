// Package membership is the cluster's membership as a plain value and the rules for changing it.
// Of this module it imports only the leaf pkg/rpcerr: its refusals are the error registry's
// values, so they reach a client with the contract's code and message wherever they are met.
//
// Invariants:
//   - A Cluster is derived only from applied raft entries and snapshots; nothing else writes it.
//   - Validate and Apply are pure and deterministic: every member applying the same entry on the
//     same Cluster reaches the same result, so they may only look at replicated data (never at a
//     member's local flags or clock).
//   - An ID, once removed, is in Removed forever and never becomes a member again. Removed is an
//     IDSet, which never changes once made, so memberships of every age share it.
//   - No two members share a peer URL.
//   - Apply of a change that Validate refuses leaves the Cluster unchanged.
//
// Checks that depend on the running cluster (which members are started and connected, whether a
// learner has caught up, the learner limit of the local configuration) are proposal-time checks:
// see Quorum in quorum.go, which is pure too but takes raft's view of the peers as input.
package membership
