package main

import (
	"os"
	"runtime/debug"
	"sync"
)

// startGCPercent is the garbage collector's goal, in GOGC's terms, while a member starts.
//
// A starting member allocates at once what the runtime's first heap goal (4 MiB) barely holds:
// package init, its peer connections, and, when it joins, the snapshot it is sent (a membership
// history at its default bound is 150 KiB of it, copied as it is received, decoded and
// written). A collection cycle then began as that snapshot arrived, and its receipt waited for
// the cycle: 6 to 16 ms more on the way to being ready, in execution traces of joining learners
// (docs/benchmarks.md). With four times the goal, as the Go compiler raises its own for its
// start, the first cycle comes once the member is ready; from then on the goal is GOGC's
// default.
const startGCPercent = 400

// startingHeap raises the garbage collector's goal for the member's start, unless GOGC is set,
// and returns what puts it back, which may be called more than once.
func startingHeap() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(startGCPercent)
	return sync.OnceFunc(func() { debug.SetGCPercent(prev) })
}
