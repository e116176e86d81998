package command

import (
	"strings"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

// formatsAnnotation lists, on a command, the -w formats it prints, comma-separated.
const formatsAnnotation = "clusterctl-formats"

// registerFormats records the formats cmd prints, for -w's completion.
func registerFormats(cmd *cobra.Command, fs []printer.Format) {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[formatsAnnotation] = strings.Join(s, ",")
}

// kindOf is the printer kind of the commands that print through the kinds table, by path
// below the root.
var kindOf = map[string]printer.Kind{
	"member add": printer.MemberAdd, "member remove": printer.MemberRemove,
	"member update": printer.MemberUpdate, "member promote": printer.MemberPromote,
	"member list": printer.MemberList, "snapshot save": printer.SnapshotSave,
	"snapshot status": printer.SnapshotStatus, "snapshot restore": printer.SnapshotRestore,
}

var discoveryKindOf = map[string]printer.Kind{
	"discovery new": printer.DiscoveryNew, "discovery status": printer.DiscoveryStatus,
}

// formatsOf are the formats cmd prints; every format for a command that prints none of its own.
func formatsOf(cmd *cobra.Command) []string {
	if s, ok := cmd.Annotations[formatsAnnotation]; ok {
		return strings.Split(s, ",")
	}
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	var fs []printer.Format
	if k, ok := kindOf[path]; ok {
		fs = printer.Formats(k)
	} else if k, ok := discoveryKindOf[path]; ok {
		fs = printer.DiscoveryFormats(k)
	} else {
		fs = []printer.Format{printer.Simple, printer.Table, printer.JSON, printer.Env}
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// registerCompletions completes the values of -w, by the command being completed, and of
// every --consistency.
func registerCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("write-out", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return prefixed(formatsOf(cmd), toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.LocalNonPersistentFlags().Lookup("consistency") != nil {
			_ = c.RegisterFlagCompletionFunc("consistency", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return []cobra.Completion{
					cobra.CompletionWithDesc("l", "linearizable, through the leader"),
					cobra.CompletionWithDesc("s", "serializable, from the member answering"),
				}, cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
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
