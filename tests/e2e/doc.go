// Package e2e holds the end-to-end tests: testscript scripts that start real clusterd processes on
// 127.0.0.1 and drive them with the real clusterctl, checking stdout, stderr and exit codes.
//
// Two script sets share one harness (the commands in commands_test.go, built on
// internal/testkit/cluster):
//
//   - testdata/*.txtar run against clusterd and clusterctl, built once per `go test` run from
//     ./cmd into a temporary directory that is put first on the scripts' PATH.
//   - testdata/etcd/*.txtar run the same harness against real etcd and etcdctl 3.7.1, built by
//     scripts/build-etcd.sh into its cache. They prove the harness itself (start, kill -9,
//     restart, start from a printed environment, waiting for exit) on a server whose behaviour is
//     known, so a failing clusterd script points at clusterd and not at the harness.
//
// Every wait in a script is on a condition with a deadline; no script sleeps.
package e2e
