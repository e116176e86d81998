// Package cluster runs a set of etcd-style members on 127.0.0.1 as real processes for the
// end-to-end and interop tests and the bench (tests/bench): clusterd, or real etcd, since clusterd
// takes etcd's flags and the same code starts either. It is the one harness for processes; the
// one for members inside a test binary is internal/testkit/servertest.
//
// A member has a name, a client address, a peer URL and a data dir, allocated once and kept for
// the life of the cluster, so a member restarted after kill -9 comes back on the same ports and
// data. Readiness is decided by asking the members over etcd's v3 gRPC API (Maintenance.Status,
// Cluster.MemberList), which clusterd serves byte for byte like etcd, and never by waiting a
// fixed time. Every wait has a deadline.
//
// What differs between its users is said through Config (Args every member gets, Profile for
// pprof on a metrics URL, a Context that ends every wait early), not by copies of this code.
//
// The package also builds what the tests run: the module's own binaries (Build: for testing, with
// the race detector when the tests have it, or as `make build` ships them for the bench) and
// etcd 3.7.1 through scripts/build-etcd.sh, whose cache makes every run after the first fast.
package cluster
