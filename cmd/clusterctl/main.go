// Command clusterctl manages the membership of a clusterd or etcd cluster.
package main

import (
	"os"
	"runtime"

	"github.com/clusterctl/clusterctl/cmd/clusterctl/command"
)

func main() {
	// clusterctl makes one request at a time. With a second P the runtime wakes another thread
	// whenever one of grpc's helper goroutines becomes runnable, which costs a process this
	// short more than it gains: a measurable share of `member list`'s wall time (docs/benchmarks.md).
	// GOMAXPROCS from the environment still wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	os.Exit(command.Main())
}
