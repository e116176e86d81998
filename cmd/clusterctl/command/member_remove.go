package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type memberRemoveOptions struct {
	memberChangeOptions
}

func newMemberRemoveCmd(g *Globals) *cobra.Command {
	o := &memberRemoveOptions{memberChangeOptions{Globals: g, kind: printer.MemberRemove}}
	return &cobra.Command{
		Use:   "remove <id|name>",
		Short: "Remove a member from the cluster",
		Long: `Remove a member from the cluster. The member is named by its 16-hex-digit ID or by its
name; a name that matches more than one member is refused (exit 16).`,
		Example: `  clusterctl member remove 96dbf27657837fe1
  clusterctl member remove infra3`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o),
	}
}

func (o *memberRemoveOptions) run(ctx context.Context) error {
	return o.change(ctx, o.Client.MemberRemove)
}
