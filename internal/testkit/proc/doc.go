// Package proc starts, signals and reaps the server processes of the end-to-end and interop tests.
//
// The testscript harness (tests/e2e), the interop tests (tests/interop) and the bench
// (tests/bench) all start members through it, by way of internal/testkit/cluster.
//
// Invariants:
//   - Every wait is bounded by a deadline; nothing here sleeps for a fixed time to let a
//     process "settle". Poll retries a condition with a growing interval until it holds or its
//     deadline passes.
//   - A started process is reaped by exactly one goroutine, so its exit status is recorded once
//     and can be read any number of times afterwards, before or after a kill.
//   - A process's stdout and stderr go to files (truncated at each start), so a test can read
//     what a member printed while it ran and after it exited.
//   - Processes die with the test binary (Pdeathsig), so a test that panics or times out does not
//     leave servers holding ports on the machine.
//   - Only 127.0.0.1 is used; FreePorts never hands out the same port twice in one test binary.
package proc
