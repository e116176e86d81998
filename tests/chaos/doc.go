// Package chaos is a fault test of clusterd's membership: real clusterd processes on 127.0.0.1,
// their peer traffic through a TCP proxy of the test's own, clients changing the membership
// concurrently while members are killed, paused, partitioned and removed, and at the end a
// linearizability check of everything the clients saw against a model of the membership.
//
// Invariants the test keeps, so that a failure means the server is wrong:
//   - The model (model.go) follows the rules of pkg/server/membership and docs: a refusal is
//     accepted only in a state where that refusal is right, a refusal that docs/exit-codes.md
//     calls "nothing changed" changes nothing, and a call whose outcome is unknown (timed out,
//     connection lost after sending) may take effect at any point after it was made or never,
//     which porcupine expresses as a return at infinity.
//   - Member IDs are assigned by the server. Every add carries a name used once, so a member
//     seen in any list is traced back to exactly one add call; an add whose outcome was unknown
//     takes the ID its name was seen with, or none.
//   - Peer traffic goes through the proxy only: every member's peer URL is a proxy port. The
//     proxy learns which member opened a connection from /proc, so faults act per link.
//   - Every loop is bounded in count and time, every process the test starts is stopped when it
//     ends, pass or fail, and everything listens on 127.0.0.1 only.
//   - A run is driven by one seed, printed first; -seed=N makes the same choices again (the
//     timing of the processes still differs from run to run).
package chaos
