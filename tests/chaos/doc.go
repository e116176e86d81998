// Package chaos is a fault test of clusterd's membership: real clusterd processes on 127.0.0.1,
// their peer traffic through a TCP proxy of the test's own, clients changing the membership
// concurrently while members are killed, paused, partitioned and removed, die at crash points in
// their write path, catch up from snapshots, run out of disk and have their certificates
// rotated, and at the end a linearizability check of everything the clients saw against a model
// of the membership. docs/chaos.md lists the faults, the crash points and the flags.
//
// Invariants the test keeps, so that a failure means the server is wrong:
//   - The model (model.go) follows the rules of pkg/membership and docs: a refusal is
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
//   - Added members start (phase two) from the environment `clusterctl member add -w env`
//     prints: the test renders it with pkg/printer from a pkg/client AddResult, reads the
//     printed KEY="value" lines back as a shell would (strictly: four documented keys, the
//     documented quoting, or the run fails), and starts clusterd with them as ETCD_*
//     variables, without the flags they stand for (a flag would win). The lines are the ones
//     printed from the add's answer while the membership is still the one it carried; after a
//     change in between, or for an add of unknown outcome, they are printed again from the
//     membership at the start, as re-running member add would (an environment is valid only for
//     the membership it was printed for, in etcd too). The report counts each case under
//     "join env:"; bootstrap and restarts on a data dir keep their flags.
//   - A member killed with SIGKILL and restarted on its data dir must answer Status within 30 s
//     as the same member, its applied index not behind the one it reported just before the
//     kill (when it answered then; the report counts checks made without that baseline). A
//     silent member fails the test unless something else explains the silence, each counted
//     with its reason: another fault killed or paused it, or it was removed since (by a client,
//     or by "remove leader", partition or not), or it exited by itself (which the reconciler
//     judges). Status needs no leader, so a cluster without quorum is no excuse. A check that
//     the end of the run cuts short is made in the heal phase, with a bound of its own. The
//     report's "restarted members came back" line counts restarts, checks made, skipped (each
//     reason on its own line) and failed.
//   - No accepted voter add leaves fewer voters that may count as live than a quorum (live.go):
//     a voter whose slot's process had ended, or had been paused for an election timeout, while
//     the add was decided does not count; what the test cannot know for certain counts as live.
//   - A run is driven by one seed, printed first: every random choice of the test (clients,
//     fault lanes, the proxy's drops, the reconciler's choices of member to list and of removed
//     members to restart) is a stream of it, so -seed=N replays the run as far as the test
//     decides it. It does not replay the processes: scheduling, elections, which calls time
//     out, the ports the kernel hands out, and so what the clients see and choose from next,
//     still differ from run to run, so a replay makes the same first choices and then drifts.
package chaos
