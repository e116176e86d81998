package command

import (
	"strings"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

// registerCompletions completes the values of -w, by the command being completed, and of
// --context, by the contexts file. Each command's own flags register theirs where they are
// defined (consistencyFlag): walking the tree for them here costs every start of clusterctl.
func registerCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("write-out", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return prefixed(printer.FormatsNamed(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")), toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc(contextFlag, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return contextNames(toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// consistencyFlag adds --consistency, etcdctl's l or s (checkConsistency), to cmd, completed.
func consistencyFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "consistency", "l", "l: linearizable, through the leader; s: serializable, from the member answering")
	_ = cmd.RegisterFlagCompletionFunc("consistency", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{
			cobra.CompletionWithDesc("l", "linearizable, through the leader"),
			cobra.CompletionWithDesc("s", "serializable, from the member answering"),
		}, cobra.ShellCompDirectiveNoFileComp
	})
}

func prefixed(values []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
