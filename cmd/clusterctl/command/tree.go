package command

import (
	"io"

	"github.com/spf13/cobra"
)

// NewRootCommand is clusterctl's whole command tree, for tools that read its definitions (the
// man page generator, scripts/genman) rather than run it: output is discarded, and the
// completion command cobra adds when a command line runs is there too.
func NewRootCommand() *cobra.Command {
	root := newRootCmd(&Globals{Out: io.Discard, Err: io.Discard})
	root.InitDefaultCompletionCmd()
	return root
}
