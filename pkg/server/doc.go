// Package server is clusterd's composition root: it validates a Config, decides how the member
// starts (startup.go: a new cluster, joining an existing one, a restart on its data directory,
// or a forced new cluster from it, whose log raftnode rewrites), and wires storage, raftnode,
// transport, reconfig and api together (server.go). Run returns an error; nothing here exits
// the process.
//
// Invariants:
//   - Everything a person can get wrong on the command line is refused before the data
//     directory is touched, so a refused start writes nothing.
//   - A restart on an existing data directory ignores the --initial-cluster* flags, except that
//     --initial-cluster-state=new naming another cluster is refused.
//   - A data directory holding a tombstone never starts again (ErrRemoved). The tombstone is
//     written only on proof of the member's committed removal: applied from its own log, or
//     confirmed by a majority of the voters it knows (removal.go), never on one peer's word.
//     A voter's answer that --force-new-cluster removed this member, unconfirmed, is reported
//     (an error line once a minute, clusterd_membership_forced_out, Status's errors) and
//     stops nothing: the old members of a forced cluster run on until the operator stops them.
//   - TLS (servertls) is validated with the other flags and loaded before the listeners open;
//     each port's https:// listeners are served by a gRPC server with TLS credentials and its
//     plain ones by another with the same services. The client port's servers check admin
//     operations (authz) whether the listener is TLS or not: a plain caller has no CN.
//   - The metrics URLs (/metrics, /health, and profiles with EnablePprof) only read the member:
//     nothing served there changes it, and they close with it, cutting a profile in progress
//     short. Each client listener serves /metrics and /health over HTTP beside gRPC (portmux
//     tells a connection's protocol from its first bytes), never the profiles.
package server
