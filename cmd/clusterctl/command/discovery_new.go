package command

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/spf13/cobra"
)

type discoveryNewOptions struct {
	*Globals
	Size  int
	Token string
}

func newDiscoveryNewCmd(g *Globals) *cobra.Command {
	o := &discoveryNewOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Create a discovery token for a new cluster of --size members",
		Long: `Create a discovery token on the discovery service (the global --endpoints): write the expected
size under /_etcd/registry/<token>/_config/size, as etcd's v3 discovery protocol defines it, and
print the token. A token already in use is refused: a token bootstraps one cluster only.

-w env prints the ETCD_DISCOVERY_TOKEN and ETCD_DISCOVERY_ENDPOINTS lines every member of the new
cluster starts with; when the discovery service was reached over TLS, also the members' TLS
settings (ETCD_DISCOVERY_CACERT, _CERT, _KEY), naming the files --cacert, --cert and --key gave:
each member must have them at those paths. A user or password is never printed.`,
		Example: `  TOKEN=$(clusterctl --endpoints=10.0.0.9:2379 discovery new --size=3)
  clusterctl --endpoints=10.0.0.9:2379 discovery new --size=5 -w env > discovery.env`,
		Args: noArgs,
		RunE: runE(g, printer.DiscoveryNew, o),
	}
	cmd.Flags().IntVar(&o.Size, "size", 3, "how many members the new cluster starts with")
	cmd.Flags().StringVar(&o.Token, "token", "", "the token to create (default: 32 random hex digits)")
	return cmd
}

func (o *discoveryNewOptions) validate([]string) error {
	if o.Size < 1 {
		return fmt.Errorf("--size %d: a cluster has at least one member", o.Size)
	}
	if o.Token != "" {
		if err := registry.ValidateToken(o.Token); err != nil {
			return fmt.Errorf("--token: %w", err)
		}
	}
	return nil
}

func (o *discoveryNewOptions) run(ctx context.Context) error {
	token := o.Token
	if token == "" {
		b := make([]byte, 16)
		// crypto/rand.Read never fails (Go 1.24 and later).
		_, _ = rand.Read(b)
		token = hex.EncodeToString(b)
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	// Any key of the token, a registration without a size included, means someone uses it.
	kvs, err := c.Range(ctx, registry.TokenPrefix(token), true)
	if err != nil {
		return err
	}
	if len(kvs) > 0 {
		return &TokenInUseError{Token: token, Keys: len(kvs)}
	}
	// Created only if absent: of two concurrent creations of one token, one is refused.
	answer, err := c.Txn(ctx, registry.CreateTxn(registry.SizeKey(token), strconv.Itoa(o.Size)))
	if err != nil {
		return err
	}
	if created, _ := registry.CreateAnswer(answer); !created {
		return &TokenInUseError{Token: token, Keys: 1}
	}
	out := &printer.NewToken{Token: token, Size: o.Size, Endpoints: c.Endpoints()}
	if c.UsesTLS() {
		out.TLS = memberTLS(o.given.tls)
	}
	return o.Printer.DiscoveryNew(o.Out, out)
}

// memberTLS are the TLS settings a member reaches the discovery service with, as clusterctl
// just did: the same files, made absolute, since a member does not run in clusterctl's
// directory.
func memberTLS(o clienttls.Options) *clienttls.Options {
	for _, p := range []*string{&o.CACert, &o.Cert, &o.Key} {
		*p = absPath(*p)
	}
	return &o
}
