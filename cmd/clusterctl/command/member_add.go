package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type memberAddOptions struct {
	*Globals
	PeerURLsFlag string
	Learner      bool
	// DryRun asks clusterd to run every check and add nothing.
	DryRun bool

	Name     string
	PeerURLs []string
}

func newMemberAddCmd(g *Globals) *cobra.Command {
	o := &memberAddOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "add <name> --peer-urls=URL[,URL...] [--learner] [--dry-run]",
		Short: "Add a member to the cluster, and print the environment it starts with",
		Long: `Add a member to the cluster (phase one), and print the environment the new member's
process starts with (phase two): every member under its name, the new one included.

Start the new member as a learner and promote it once it has caught up: a learner does not vote,
so adding it cannot cost the cluster its quorum.

With --dry-run, clusterd runs every check without adding anything and clusterctl prints the
voters and quorum before and after and whether the add would be accepted. The ID it shows is
provisional: the add itself assigns another.`,
		Example: `  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner

  # export the environment of phase two; clusterd and etcd read ETCD_* at start-up
  set -a; eval "$(clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner -w env)"; set +a

  # would adding a voter keep the cluster's quorum?
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --dry-run`,
		Args: cobra.ArbitraryArgs,
		RunE: runE(g, o),
	}
	cmd.Flags().StringVar(&o.PeerURLsFlag, "peer-urls", "", "the new member's peer URLs, comma-separated")
	cmd.Flags().BoolVar(&o.Learner, "learner", false, "add the member as a learner (non-voting)")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberAddOptions) validate(args []string) error {
	if len(args) == 0 || args[0] == "" {
		return errNoName
	}
	if len(args) > 1 {
		return tooManyArgs(args[1:])
	}
	o.Name = args[0]
	// The one rule for names, clusterd's too: a name it would refuse is refused before sending.
	if err := membership.ValidateName(o.Name); err != nil {
		return err
	}
	// Beyond the rule, the wire: the name travels as gRPC metadata, which carries printable
	// ASCII only.
	if strings.ContainsFunc(o.Name, func(r rune) bool { return r < ' ' || r > '~' }) {
		return fmt.Errorf("member name %q: clusterctl sends the name as gRPC metadata, which carries printable ASCII only", o.Name)
	}
	var err error
	if o.PeerURLs, err = peerURLs(o.PeerURLsFlag); err != nil {
		return err
	}
	return checkFormat(o.Printer, printer.MemberAdd, o.DryRun)
}

func (o *memberAddOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	if o.DryRun {
		r, err := c.MemberAddDryRun(ctx, o.Name, o.PeerURLs, o.Learner)
		return o.printDryRun(printer.MemberAdd, r, err)
	}
	r, err := c.MemberAdd(ctx, o.Name, o.PeerURLs, o.Learner)
	if err != nil {
		return err
	}
	return o.Printer.MemberAdd(o.Out, r)
}
