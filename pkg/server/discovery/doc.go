// Package discovery bootstraps a new cluster through etcd's v3 discovery protocol, with a
// private etcd cluster as the discovery service: the member reads the expected size under its
// token, registers its name and peer URLs, waits until the cluster is full, and gets back the
// initial cluster exactly as --initial-cluster would have given it (JoinCluster). The layout
// and the rules of the registry are pkg/registry's, shared with clusterctl.
//
// The discovery client is etcd's own (go.etcd.io/etcd/client/v3): it brings the watch, the
// retries, TLS and auth the protocol needs and is what etcd itself uses for it. It is linked
// into clusterd only; clusterctl reads the registry through pkg/client's two KV calls, which
// need none of that.
//
// Invariants:
//   - Discovery is for bootstrap only: the caller consults it only for a new cluster on an empty
//     data directory. It never changes a running cluster (grow one with member add).
//   - Every member derives the same initial cluster: the first <size> registrations by create
//     revision (registry.Place), whatever the order members start and restart in.
//   - A refusal before registering writes nothing: a member beyond the size, a name or a peer URL
//     another member registered, a member that already bootstrapped with this token, a
//     discovery service that cannot be reached, and a user it refuses the token's keys.
//   - A discovery service that cannot be reached is refused once the dial timeout has passed
//     (Config.DialTimeout), not the dial and the first request's timeouts together.
//   - A member that registered and stopped before it finished (kill -9 while waiting) finds its
//     own registration when it starts again with the same name and peer URLs, and goes on.
//   - The wait is bounded (Config.WaitTimeout) and logs its progress every few seconds.
//   - Nothing here exits the process or prints: refusals are typed errors, each one line that
//     says what the operator does next.
package discovery
