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

type moveLeaderOptions struct {
	*Globals
	Ref string
}

var errNoTransferee = errors.New("member ID or name of the new leader not provided")

func newMoveLeaderCmd(g *Globals) *cobra.Command {
	o := &moveLeaderOptions{Globals: g}
	return &cobra.Command{
		Use:   "move-leader <id|name>",
		Short: "Hand leadership to another voting member",
		Long: `Hand leadership to the voting member given by ID or name (resolved as member remove resolves
it), through etcd's Maintenance MoveLeader. clusterctl finds the leader itself: the status of
the endpoints says who leads, and the request goes to that member's client URL. It answers once
the member leads.`,
		Example: `  clusterctl move-leader infra1
  clusterctl --endpoints=10.0.0.1:2379 move-leader 8211f1d0f64f3269 -w json`,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, printer.MoveLeader, o),
	}
}

func (o *moveLeaderOptions) validate(args []string) error {
	switch {
	case len(args) == 0:
		return errNoTransferee
	case len(args) > 1:
		return tooManyArgs(args[1:])
	}
	o.Ref = args[0]
	return nil
}

func (o *moveLeaderOptions) run(ctx context.Context) error {
	// The list also gives the leader's client URL.
	return o.onMember(ctx, o.Ref, true, func(ctx context.Context, c *client.Client, members []client.Member, target uint64) error {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		if st.Leader == 0 {
			return rpcerr.ErrNoLeader
		}
		url, err := clientURLOf(members, st.Leader)
		if err != nil {
			return err
		}
		hdr, err := c.MoveLeader(ctx, url, target)
		if err != nil {
			return err
		}
		return o.Printer.MoveLeader(o.Out, &printer.LeaderMove{Header: *hdr, From: st.Leader, To: target})
	})
}

// clientURLOf is the first client URL of member id.
func clientURLOf(members []client.Member, id uint64) (string, error) {
	for _, m := range members {
		if m.ID == id && len(m.ClientURLs) > 0 {
			return m.ClientURLs[0], nil
		}
	}
	return "", fmt.Errorf("leader %s has no client URL to send the request to", client.FormatID(id))
}
