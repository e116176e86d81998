// Command genman writes clusterctl's man pages, one per command, into docs/man (make man). It
// is a program of its own so that clusterctl does not link the generator. clusterd's page is
// written by its package's test (go test ./cmd/clusterd -run TestManPage -args -update), the
// only place outside clusterd's main package that can reach its flag definitions.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/clusterctl/clusterctl/cmd/clusterctl/command"
	"github.com/clusterctl/clusterctl/internal/manpage"
)

func main() {
	out := flag.String("out", "docs/man", "directory to write the pages into")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
	if err := manpage.Write(command.NewRootCommand(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}
