package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/pflag"
)

// memberChangeOptions is what remove, update and promote share: one member, named by ID or
// name, and one change sent to it.
type memberChangeOptions struct {
	*Globals
	kind printer.Kind
	Ref  string
	// DryRun asks clusterd to run every check and propose nothing.
	DryRun bool
}

// addDryRunFlag is the --dry-run flag of add, remove, update and promote.
func addDryRunFlag(f *pflag.FlagSet, v *bool) {
	f.BoolVar(v, "dry-run", false, "ask clusterd whether the change would be accepted, and change nothing")
}

func (o *memberChangeOptions) validate(args []string) error {
	var err error
	o.Ref, err = oneArg(args, errNoID)
	return err
}

// sendFunc and dryRunFunc send one change of a member, or its dry run, with the client first so
// that a client method expression such as (*client.Client).MemberRemove is one.
type (
	sendFunc   func(*client.Client, context.Context, uint64) (*client.ChangeResult, error)
	dryRunFunc func(*client.Client, context.Context, uint64) (*client.DryRun, error)
)

// change resolves the member, sends the change (or its dry run) and prints its result, within
// one --command-timeout.
func (o *memberChangeOptions) change(ctx context.Context, send sendFunc, dryRun dryRunFunc) error {
	return o.onMember(ctx, o.Ref, false, func(ctx context.Context, c *client.Client, _ []client.Member, id uint64) error {
		return o.sendTo(ctx, c, id, send, dryRun)
	})
}

// sendTo sends the change of member id, or with --dry-run asks whether it would be accepted.
func (o *memberChangeOptions) sendTo(ctx context.Context, c *client.Client, id uint64, send sendFunc, dryRun dryRunFunc) error {
	if o.DryRun {
		r, err := dryRun(c, ctx, id)
		return o.printDryRun(o.kind, r, err)
	}
	r, err := send(c, ctx, id)
	if err != nil {
		return err
	}
	return o.Printer.MemberChange(o.Out, o.kind, r)
}

// printDryRun prints the verdict of a dry run of kind k and returns the refusal, so that the
// Error: line and the exit code are those the real command would give.
func (g *Globals) printDryRun(k printer.Kind, r *client.DryRun, err error) error {
	if err != nil {
		return err
	}
	if err := g.Printer.DryRun(g.Out, k, r); err != nil {
		return err
	}
	return r.Err
}
