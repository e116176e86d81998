package command

import (
	"context"
	"fmt"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

// twoVoterWarning is printed before removing a voter from a cluster of two voters. The removal
// is committed under the old configuration, so it needs both voters: if either stops before it
// is applied, the cluster has no quorum and cannot even finish the removal.
const twoVoterWarning = "Warning: removing a voter from a cluster of two voters: both must stay up until the removal is applied, or the cluster loses its quorum"

type memberRemoveOptions struct {
	memberChangeOptions
}

func newMemberRemoveCmd(g *Globals) *cobra.Command {
	o := &memberRemoveOptions{memberChangeOptions{Globals: g, kind: printer.MemberRemove}}
	cmd := &cobra.Command{
		Use:   "remove <id|name> [--dry-run]",
		Short: "Remove a member from the cluster",
		Long: `Remove a member from the cluster. The member is named by its 16-hex-digit ID or by its
name; a name that matches more than one member is refused (exit 16).

Removing a voter from a cluster of two voters prints a warning on stderr first: until the removal
is applied, both voters must stay up.

With --dry-run, clusterd runs every check without removing anything and clusterctl prints the
voters and quorum before and after and whether the removal would be accepted.`,
		Example: `  clusterctl member remove 96dbf27657837fe1
  clusterctl member remove infra3 --dry-run`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o),
	}
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberRemoveOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	// The list resolves a name and counts the voters; by ID it costs one request more than the
	// removal alone, which a change can afford.
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return err
	}
	id, err := client.ResolveIn(list.Members, o.Ref)
	if err != nil {
		return err
	}
	if removesOneOfTwoVoters(list.Members, id) {
		fmt.Fprintln(o.Err, twoVoterWarning)
	}
	return o.sendTo(ctx, c, id, (*client.Client).MemberRemove, (*client.Client).MemberRemoveDryRun)
}

// removesOneOfTwoVoters reports whether id is a voter of a configuration of exactly two voters.
// A learner does not vote, so removing one changes no quorum.
func removesOneOfTwoVoters(ms []client.Member, id uint64) bool {
	voters, target := 0, false
	for _, m := range ms {
		if !m.IsLearner {
			voters++
			target = target || m.ID == id
		}
	}
	return voters == 2 && target
}
