package main

import (
	"testing"

	"github.com/clusterctl/clusterctl/cmd/clusterctl/command"
	"github.com/clusterctl/clusterctl/internal/manpage"
)

// TestManPagesUpToDate fails when docs/man does not hold exactly the pages clusterctl's
// commands make: a page missing, different, or for a command that is gone.
func TestManPagesUpToDate(t *testing.T) {
	stale, err := manpage.Stale(command.NewRootCommand(), "../../docs/man")
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("docs/man is out of date for %v: run make man", stale)
	}
}
