package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/spf13/cobra"
)

// twoVoterWarning is printed before removing a voter from a cluster of two voters. The removal
// is committed under the old configuration, so it needs both voters: if either stops before it
// is applied, the cluster has no quorum and cannot even finish the removal.
const twoVoterWarning = "Warning: removing a voter from a cluster of two voters: both must stay up until the removal is applied, or the cluster loses its quorum"

type memberRemoveOptions struct {
	memberChangeOptions
	// IgnoreNotFound takes a member that is not there as removed.
	IgnoreNotFound bool
}

func newMemberRemoveCmd(g *Globals) *cobra.Command {
	o := &memberRemoveOptions{memberChangeOptions: memberChangeOptions{Globals: g, kind: printer.MemberRemove}}
	cmd := &cobra.Command{
		Use:   "remove <id|name> [--dry-run]",
		Short: "Remove a member from the cluster",
		Long: `Remove a member from the cluster. The member is named by its 16-hex-digit ID or by its
name; a name that matches more than one member is refused (exit 16).

Removing a voter from a cluster of two voters prints a warning on stderr first: until the removal
is applied, both voters must stay up.

With --ignore-not-found (kubectl's flag), a member that is not there is success: exit 0, nothing
on stdout, a note on stderr; a script that removes and may run twice needs nothing more.

With --dry-run, clusterd runs every check without removing anything and clusterctl prints the
voters and quorum before and after and whether the removal would be accepted.`,
		Example: `  clusterctl member remove 96dbf27657837fe1
  clusterctl member remove infra3 --dry-run
  clusterctl member remove infra3 --ignore-not-found`,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o.kind, o),
	}
	cmd.Flags().BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, "succeed when no member has this ID or name: it is gone already")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberRemoveOptions) validate(args []string) error {
	if o.IgnoreNotFound && o.DryRun {
		return errors.New("--ignore-not-found and --dry-run cannot be used together")
	}
	return o.memberChangeOptions.validate(args)
}

func (o *memberRemoveOptions) run(ctx context.Context) error {
	// The list also counts the voters: by ID it costs one request more than the removal alone.
	err := o.onMember(ctx, o.Ref, true, func(ctx context.Context, c *client.Client, members []client.Member, id uint64) error {
		if removesOneOfTwoVoters(members, id) {
			fmt.Fprintln(o.Err, twoVoterWarning)
		}
		return o.sendTo(ctx, c, id, (*client.Client).MemberRemove, (*client.Client).MemberRemoveDryRun)
	})
	if o.IgnoreNotFound && errors.Is(err, rpcerr.ErrMemberNotFound) {
		// kubectl's --ignore-not-found: nothing on stdout, and a note on stderr for the person.
		fmt.Fprintf(o.Err, "member %s not found: nothing to remove\n", o.Ref)
		return nil
	}
	return err
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
