// Package metrics is one member's Prometheus metrics: etcd's, under etcd's names, labels, help
// texts, types and buckets (etcd 3.7; the two proposal indexes are counters where etcd declares
// gauges, docs/metrics.md), so that dashboards and alert rules written for etcd work
// on clusterd unchanged; clusterd's own for membership, which etcd lacks; gRPC's as etcd exposes
// them (go-grpc-middleware's prometheus provider, the library etcd uses); and the Go and process
// collectors. docs/metrics.md lists every metric.
//
// Invariants:
//   - Everything is registered on the Metrics' own registry, never on Prometheus's global one:
//     two members in one process (the in-process cluster tests) each have their own, and a
//     library registering globally cannot leak into /metrics.
//   - A value that states a fact about the member (leader, learner, indexes, members, lag) is
//     read from the member's current State at each scrape, so it cannot drift from the truth
//     through a missed update. Only what happens (a leader change, bytes sent, a failed
//     proposal, a commit's duration) is counted at the event, by the part where it happens.
//   - Every method is safe on a nil *Metrics and does nothing: a part built without metrics
//     (a unit test, a tool) passes nil rather than checking at each call.
//   - Every label takes values from a closed set or is a member ID (16 lowercase hex digits, as
//     clusterctl prints it), so the number of series is bounded by the membership's history.
//   - Series that a query compares against zero exist from the start at zero (changes by kind
//     and outcome, refusals by reason, members by role and state), so rate() and absent() see
//     them before the first event.
//   - Nothing here is imported by cmd/clusterctl: the client binary links no Prometheus code.
package metrics
