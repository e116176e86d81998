package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the garbage collector's goal without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartingHeap(t *testing.T) {
	before := gcPercent()
	t.Run("GOGC unset", func(t *testing.T) {
		if v, set := os.LookupEnv("GOGC"); set {
			os.Unsetenv("GOGC")
			t.Cleanup(func() { os.Setenv("GOGC", v) })
		}
		restore := startingHeap()
		if got := gcPercent(); got != startGCPercent {
			t.Fatalf("while starting: GOGC %d, want %d", got, startGCPercent)
		}
		restore()
		restore() // at ready, then again as run returns
		if got := gcPercent(); got != before {
			t.Fatalf("once ready: GOGC %d, want %d as before", got, before)
		}
	})
	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "150")
		restore := startingHeap()
		if got := gcPercent(); got != before {
			t.Fatalf("GOGC set: the goal moved to %d", got)
		}
		restore()
		if got := gcPercent(); got != before {
			t.Fatalf("GOGC set: the goal moved to %d", got)
		}
	})
}
