package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type endpointHealthOptions struct{ endpointOptions }

func newEndpointHealthCmd(g *Globals) *cobra.Command {
	o := &endpointHealthOptions{endpointOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that each endpoint serves a linearizable read",
		Long: `Check, for each endpoint, that its member serves a linearizable read, which needs a leader and
a quorum: on etcd the read etcdctl makes (a get of the key "health"; a permission denied answer
counts as healthy, as in etcdctl), on clusterd a linearizable member list. Each line says how
long the check took and, when it failed, why. When any endpoint is unhealthy the exit status
is 26.`,
		Example: `  clusterctl endpoint health --cluster
  clusterctl --endpoints=10.0.0.1:2379 endpoint health -w json`,
		Args: noArgs,
		RunE: runE(g, printer.EndpointHealth, o),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *endpointHealthOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	eps, _, err := o.targets(ctx, c)
	if err != nil {
		return err
	}
	hs := c.HealthOfEach(ctx, eps, o.CommandTimeout)
	if err := o.Printer.EndpointHealth(o.Out, hs); err != nil {
		return err
	}
	failed := 0
	for _, h := range hs {
		if !h.Healthy() {
			failed++
		}
	}
	if failed > 0 {
		return &endpointsError{failed: failed, total: len(hs), unhealthy: true}
	}
	return nil
}
