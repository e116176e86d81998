package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type memberUpdateOptions struct {
	memberChangeOptions
	PeerURLsFlag string

	PeerURLs []string
}

func newMemberUpdateCmd(g *Globals) *cobra.Command {
	o := &memberUpdateOptions{memberChangeOptions: memberChangeOptions{Globals: g, kind: printer.MemberUpdate}}
	cmd := &cobra.Command{
		Use:   "update <id|name> --peer-urls=URL[,URL...] [--dry-run]",
		Short: "Replace the peer URLs of a member",
		Long: `Replace the peer URLs of a member. A learner stays a learner. The member is named by its
16-hex-digit ID or by its name.

With --dry-run, clusterd runs every check without changing anything and clusterctl prints the
voters and quorum before and after and whether the update would be accepted.`,
		Example: `  clusterctl member update infra0 --peer-urls=http://10.0.0.1:2380,http://infra0.example:2380
  clusterctl member update infra0 --peer-urls=http://10.0.0.1:2380 --dry-run`,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o.kind, o),
	}
	cmd.Flags().StringVar(&o.PeerURLsFlag, "peer-urls", "", "the member's new peer URLs, comma-separated")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberUpdateOptions) validate(args []string) error {
	if err := o.memberChangeOptions.validate(args); err != nil {
		return err
	}
	var err error
	o.PeerURLs, err = peerURLs(o.PeerURLsFlag)
	return err
}

func (o *memberUpdateOptions) run(ctx context.Context) error {
	return o.change(ctx, func(c *client.Client, ctx context.Context, id uint64) (*client.ChangeResult, error) {
		return c.MemberUpdate(ctx, id, o.PeerURLs)
	}, func(c *client.Client, ctx context.Context, id uint64) (*client.DryRun, error) {
		return c.MemberUpdateDryRun(ctx, id, o.PeerURLs)
	})
}
