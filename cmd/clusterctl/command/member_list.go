package command

import (
	"context"
	"fmt"
	"sync"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type memberListOptions struct {
	*Globals
	Consistency string
}

func newMemberListCmd(g *Globals) *cobra.Command {
	o := &memberListOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the members of the cluster",
		Long: `List the members of the cluster: ID, started or unstarted, name, peer URLs, client URLs,
whether the member is a learner, and (table and json) whether it leads. With several endpoints,
each is also asked for its status: answers that prove two groups of members apart, each deciding
on its own (different cluster IDs, two leaders in one term, or each group holding an answering
member the other's membership lacks), are a split: the list printed is one group's, every group
is named on the Error: line, and the exit status is 34.`,
		Example: `  clusterctl member list -w table
  clusterctl --endpoints=10.0.0.1:2379,10.0.0.2:2379 member list --consistency=s -w json | jq -r '.members[].name'`,
		Args: noArgs,
		RunE: runE(g, printer.MemberList, o),
	}
	consistencyFlag(cmd, &o.Consistency)
	return cmd
}

func (o *memberListOptions) validate([]string) error {
	return checkConsistency(o.Consistency)
}

// checkConsistency refuses a --consistency other than etcdctl's l and s.
func checkConsistency(c string) error {
	if c != "l" && c != "s" {
		return fmt.Errorf("unknown consistency flag %q", c)
	}
	return nil
}

func (o *memberListOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	// With several endpoints, each is asked for its status too, so that members that answer as
	// another group (a split) are not folded into the list unnoticed. Status needs no token, so
	// the statuses go at the same time as the list, on connections of their own (c is not for
	// concurrent use: the sibling is made before the list starts to change c).
	eps := c.GivenEndpoints()
	var sts []client.EndpointStatus
	var statuses sync.WaitGroup
	if len(eps) > 1 {
		if others, err := c.Sibling(eps...); err == nil {
			statuses.Go(func() { sts = others.StatusOfEach(ctx, eps, o.CommandTimeout) })
		}
	}
	r, err := c.MemberList(ctx, o.Consistency == "l")
	if err != nil {
		return err
	}
	if err := o.Printer.MemberList(o.Out, r); err != nil {
		return err
	}
	statuses.Wait()
	if split := c.Split(ctx, sts, o.CommandTimeout); split != nil {
		return split
	}
	return nil
}
