// Package membership is the cluster's membership as a plain value and the rules for changing it.
// Of this module it imports only the leaf pkg/rpcerr: its refusals are the error registry's
// values, so they reach a client with the contract's code and message wherever they are met.
//
// Invariants:
//   - A Cluster is derived only from applied raft entries and snapshots; nothing else writes it.
//   - Validate and Apply are pure and deterministic: every member applying the same entry on the
//     same Cluster reaches the same result, so they may only look at replicated data (never at a
//     member's local flags or clock).
//   - Apply checks only Applicable, whose rules never tighten from one version to the next: a
//     member replays entries that older versions committed, and must apply them as its peers
//     did. Rules for input (names, URL syntax, canonical addresses) are Validate's, before a
//     change is proposed.
//   - An ID, once removed, is in Removed forever and never becomes a member again. Removed is an
//     IDSet, which never changes once made, so memberships of every age share it.
//   - No two members share a peer URL.
//   - urls.go is the one definition of a valid member URL: clusterd's flags, Validate (through
//     ValidatePeerURLs) and clusterctl before it sends all use ValidateURL, so they cannot
//     disagree about a URL.
//   - Apply of a change that Applicable refuses leaves the Cluster unchanged.
//   - The History is part of the Cluster: ApplyRecorded records a change only when Apply accepted
//     it, from what the entry carries (its index, term, the leader's time, the Origin in the
//     Change), never from the applying member's clock, so every member records the same. Like
//     Removed, a History never changes once made: recording copies its events. Its bound (the
//     newest N) is a member's own setting; the count of dropped events says how many it no
//     longer holds.
//   - Member and Cluster (without its history) are stored as JSON in bbolt, and Kind by number:
//     a JSON tag is never renamed and a Kind never renumbered. A Change travels in raft entries
//     as clusterd.v2.Proposal, and an Event has one encoding, clusterd.v2.Event (pkg/wire).
//
// Checks that depend on the running cluster (which members are started and connected, whether a
// learner has caught up, the learner limit of the local configuration) are proposal-time checks:
// see Report and CheckQuorum in quorum.go, which are pure too but take raft's view of the peers
// (Peers) as input.
package membership
