// Package cluster runs a set of etcd-style members on 127.0.0.1 for the end-to-end and interop
// tests: clusterd, or real etcd, since clusterd takes etcd's flags and the same code starts
// either.
//
// A member has a name, a client address, a peer URL and a data dir, allocated once and kept for
// the life of the cluster, so a member restarted after kill -9 comes back on the same ports and
// data. Readiness is decided by asking the members over etcd's v3 gRPC API (Maintenance.Status,
// Cluster.MemberList), which clusterd serves byte for byte like etcd, and never by waiting a
// fixed time. Every wait has a deadline.
//
// The package also builds what the tests run: the module's own binaries (go build ./cmd/...) and
// etcd 3.7.1 through scripts/build-etcd.sh, whose cache makes every run after the first fast.
package cluster
