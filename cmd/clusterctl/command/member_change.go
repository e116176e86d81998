package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

// memberChangeOptions is what remove, update and promote share: one member, named by ID or
// name, and one change sent to it.
type memberChangeOptions struct {
	*Globals
	kind printer.Kind
	Ref  string
}

func (o *memberChangeOptions) validate(args []string) error {
	var err error
	if o.Ref, err = memberRef(args); err != nil {
		return err
	}
	return o.Printer.Check(o.kind)
}

// change resolves the member, sends the change and prints its result, within one
// --command-timeout.
func (o *memberChangeOptions) change(ctx context.Context, send func(context.Context, uint64) (*client.ChangeResult, error)) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	id, err := o.Client.Resolve(ctx, o.Ref)
	if err != nil {
		return err
	}
	r, err := send(ctx, id)
	if err != nil {
		return err
	}
	return o.Printer.MemberChange(o.Out, o.kind, r)
}
