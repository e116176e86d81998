// Package servertest runs clusters of clusterd members inside a test binary: server.New and Run
// in goroutines, each member's data in the test's t.TempDir(). It is the one in-process harness,
// for pkg/server's tests and the CLI's tests that need a real server; internal/testkit/cluster is the
// one for real processes. Counter reads one series off a /metrics page, for both.
//
// Only tests import it (`go list -deps ./cmd/clusterctl` names no pkg/server package).
//
// Invariants:
//   - Every wait is on a condition and has a deadline; nothing sleeps a fixed time to let a
//     member "settle". Eventually and Poll retry until the condition holds or the deadline
//     passes, and the failure says what was last seen.
//   - A started member is stopped when its test ends (t.Cleanup), also when the test fails, so
//     no goroutine holds a port or a data dir into the next test. One that exits by itself
//     logs what Run returned, so that a wait for it that fails says why.
//   - Ports come from internal/testkit/freeport: no two members of one test binary share one.
//   - Members run with short raft timings (Heartbeat, ElectionTimeout: half of
//     etcd's defaults) so that elections and failure detection take well under a second; a test
//     that needs other timings says so with a tweak.
package servertest
