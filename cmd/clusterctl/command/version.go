package command

import (
	"context"
	"errors"

	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/version"
	"github.com/spf13/cobra"
)

type versionOptions struct{ *Globals }

func newVersionCmd(g *Globals) *cobra.Command {
	o := &versionOptions{Globals: g}
	return &cobra.Command{
		Use:   "version",
		Short: "Print clusterctl's version, its Go version and the server's version",
		Long: `Print clusterctl's version (from git at build time), the Go release it was built with, and the
version of the first endpoint that answers (Maintenance Status: "3.7.1-clusterd" from clusterd,
etcd's own from etcd). Offline it still exits 0 and says why the server's version is unknown.`,
		Example: `  clusterctl version
  clusterctl --endpoints=10.0.0.1:2379 version -w json`,
		Args: noArgs,
		RunE: runE(g, printer.Version, o),
	}
}

func (o *versionOptions) run(ctx context.Context) error {
	v := &printer.Versions{Name: "clusterctl", Program: version.String(), Go: version.Go()}
	v.Server, v.ServerErr = o.serverVersion(ctx)
	return o.Printer.Version(o.Out, v)
}

// serverVersion is the first answering endpoint's version; no answer is no failure.
func (o *versionOptions) serverVersion(ctx context.Context) (string, error) {
	c, err := o.Client()
	if err != nil {
		if u, ok := errors.AsType[*usageError](err); ok {
			err = u.err
		}
		return "", err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return "", err
	}
	return st.Version, nil
}
