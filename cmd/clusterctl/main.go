// Command clusterctl manages the membership of a clusterd or etcd cluster.
package main

import (
	"os"

	"github.com/clusterctl/clusterctl/cmd/clusterctl/command"
)

func main() { os.Exit(command.Main()) }
