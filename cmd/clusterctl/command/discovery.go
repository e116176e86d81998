package command

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/spf13/cobra"
)

func newDiscoveryCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "discovery",
		Short: "Create and inspect etcd v3 discovery tokens on a private discovery service",
		Long: `Create and inspect the tokens of etcd's v3 discovery protocol. The endpoints (--endpoints and
the other global settings) are the discovery service's: a private etcd cluster that the members
of a new cluster find each other through at bootstrap, and never afterwards.`,
		Example: `  clusterctl --endpoints=10.0.0.9:2379 discovery new --size=3 -w env > discovery.env
  clusterctl --endpoints=10.0.0.9:2379 discovery status 4a2f0c9e1b7d4e3a8c6b5d2e1f0a9b8c -w table`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDiscoveryNewCmd(g), newDiscoveryStatusCmd(g))
	return cmd
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

// NoTokenError reports a token the discovery service has no size key for.
type NoTokenError struct {
	Token string
	Err   error // registry.ErrSizeNotFound or registry.ErrBadSizeKey
}

func (e *NoTokenError) Error() string {
	return fmt.Sprintf("%v for discovery token %q: create the token with clusterctl discovery new, or check the token and --endpoints", e.Err, e.Token)
}

func (e *NoTokenError) Unwrap() error { return e.Err }

// readToken reads every key of token in one range and places its registrations. A
// registration that cannot be read is left out, as members leave it out.
func readToken(kvs []client.KeyValue, token string) (*registry.Cluster, error) {
	size, found := 0, false
	var regs []registry.Registration
	var err error
	for _, kv := range kvs {
		switch {
		case kv.Key == registry.SizeKey(token):
			found = true
			if size, err = registry.ParseSize(kv.Value); err != nil {
				return nil, &NoTokenError{Token: token, Err: err}
			}
		case strings.HasPrefix(kv.Key, registry.MembersPrefix(token)):
			if r, err := registry.ParseRegistration(kv.Key, kv.Value, kv.CreateRevision); err == nil {
				regs = append(regs, r)
			}
		}
	}
	if !found {
		return nil, &NoTokenError{Token: token, Err: registry.ErrSizeNotFound}
	}
	return registry.Place(size, regs), nil
}
