// Package reconfig decides membership changes: on the leader it assigns IDs, runs the checks
// (the membership rules, the learner limit, learner readiness, the strict reconfiguration
// check), hands leadership away before removing itself, and proposes; on any other member it
// forwards the request to the leader over the peer port.
//
// Invariants:
//   - The checks run under the node's conf lock, against an applied membership that holds every
//     conf change in the leader's log, and the change is proposed in the term it was checked
//     in, so two requests can never both pass a check that only one of them may pass.
//   - A refusal that states a membership fact is confirmed against a linearizable read, so a
//     leader that is cut off and does not know it yet cannot refuse on a stale membership.
//   - A change of the voters the strict check accepts is accepted only once the voters heard
//     after the request (a heartbeat round raft's read index sends) keep the quorum after it, so
//     a voter that stopped or paused a moment ago never counts for it.
//   - A dry run runs exactly the checks a real request runs and proposes nothing.
//   - A request is retried (re-routed to the current leader) only when it is known not to have
//     been applied: not leader, no proposal made, or the proposal lost.
package reconfig
