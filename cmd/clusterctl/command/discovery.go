package command

import (
	"fmt"

	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/spf13/cobra"
)

func newDiscoveryCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:   "discovery",
		Short: "Create and inspect etcd v3 discovery tokens on a private discovery service",
		Long: `Create and inspect the tokens of etcd's v3 discovery protocol. The endpoints (--endpoints and
the other global settings) are the discovery service's: a private etcd cluster that the members
of a new cluster find each other through at bootstrap, and never afterwards.`,
		Example: `  clusterctl --endpoints=10.0.0.9:2379 discovery new --size=3 -w env > discovery.env
  clusterctl --endpoints=10.0.0.9:2379 discovery status 4a2f0c9e1b7d4e3a8c6b5d2e1f0a9b8c -w table`,
	}, newDiscoveryNewCmd(g), newDiscoveryStatusCmd(g))
}

// TokenInUseError refuses a token the discovery service already holds keys of: a token
// bootstraps one cluster only.
type TokenInUseError struct {
	Token string
	Keys  int
}

func (e *TokenInUseError) Error() string {
	return fmt.Sprintf("discovery token %q is already in use on this discovery service (%d keys under %s): a token bootstraps one cluster only; run discovery new without --token for a fresh one",
		e.Token, e.Keys, registry.TokenPrefix(e.Token))
}
