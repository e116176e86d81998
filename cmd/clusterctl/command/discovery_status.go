package command

import (
	"context"
	"errors"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/spf13/cobra"
)

type discoveryStatusOptions struct {
	*Globals
	Token string
}

var errNoToken = errors.New("discovery token not provided")

func newDiscoveryStatusCmd(g *Globals) *cobra.Command {
	o := &discoveryStatusOptions{Globals: g}
	return &cobra.Command{
		Use:   "status <token>",
		Short: "Show a discovery token's expected size and the members registered so far",
		Long: `Show the expected size of a discovery token and every member registered under it, in the order
they registered: the first <size> form the cluster (member); a registration after the cluster
filled is beyond-size; one that takes an earlier registration's name or peer URL is conflict.`,
		Example: `  clusterctl --endpoints=10.0.0.9:2379 discovery status 4a2f0c9e1b7d4e3a8c6b5d2e1f0a9b8c -w table`,
		RunE:    runE(g, printer.DiscoveryStatus, o),
	}
}

func (o *discoveryStatusOptions) validate(args []string) error {
	switch {
	case len(args) == 0:
		return errNoToken
	case len(args) > 1:
		return tooManyArgs(args[1:])
	}
	o.Token = args[0]
	return registry.ValidateToken(o.Token)
}

func (o *discoveryStatusOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	kvs, err := c.Range(ctx, registry.TokenPrefix(o.Token), true)
	if err != nil {
		return err
	}
	size, regs, err := registry.Read(o.Token, c.GivenEndpoints(), kvs, nil)
	if err != nil {
		return err
	}
	return o.Printer.DiscoveryStatus(o.Out, &printer.TokenStatus{Token: o.Token, Cluster: registry.Place(size, regs)})
}
