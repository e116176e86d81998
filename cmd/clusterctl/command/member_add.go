package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/spf13/cobra"
)

type memberAddOptions struct {
	*Globals
	PeerURLsFlag string
	Learner      bool
	// DryRun asks clusterd to run every check and add nothing.
	DryRun bool
	// IfNotExists takes a member with this name and exactly these peer URLs as added.
	IfNotExists bool
	// IDFile is where to write the new member's ID, for a script's next command: etcd knows a
	// member by its ID alone until it starts.
	IDFile string

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
provisional: the add itself assigns another.

With --if-not-exists, a member with this name and exactly these peer URLs already in the cluster
(on etcd, also one with these peer URLs that has not started, so has no name yet) is success:
exit 0 and the same output, its environment included. A member with this name and other peer
URLs, or with one of these peer URLs and another name, is still refused (exit 11), with what
differs.

With --id-file=FILE, the new member's ID (16 hex digits and a newline) is written to FILE once it
is added, or found with --if-not-exists, for the next command of a script: etcd knows a member by
its ID alone until it starts, so "member promote $(cat FILE)" finds it where its name would not.
The file is created before anything is sent: one that cannot be is refused at once.`,
		Example: `  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner

  # export the environment of phase two; clusterd and etcd read ETCD_* at start-up
  set -a; eval "$(clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner -w env)"; set +a

  # in a script that may run twice: the member already there with these URLs is success
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner --if-not-exists -w env > infra3.env

  # promote it by the ID the add wrote, once it is started
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner --id-file=infra3.id -w env > infra3.env
  clusterctl member promote "$(cat infra3.id)" --wait

  # would adding a voter keep the cluster's quorum?
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --dry-run`,
		RunE: runE(g, printer.MemberAdd, o),
	}
	cmd.Flags().StringVar(&o.PeerURLsFlag, "peer-urls", "", "the new member's peer URLs, comma-separated")
	cmd.Flags().BoolVar(&o.Learner, "learner", false, "add the member as a learner (non-voting)")
	cmd.Flags().BoolVar(&o.IfNotExists, "if-not-exists", false, "succeed, printing the same output, when a member with this name and exactly these peer URLs exists already")
	cmd.Flags().StringVar(&o.IDFile, "id-file", "", "write the new member's ID to this file")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberAddOptions) validate(args []string) error {
	var err error
	if o.Name, err = oneArg(args, errNoName); err != nil {
		return err
	}
	if err := checkName(o.Name); err != nil {
		return err
	}
	if o.PeerURLs, err = peerURLs(o.PeerURLsFlag); err != nil {
		return err
	}
	if o.IfNotExists && o.DryRun {
		return errors.New("--if-not-exists and --dry-run cannot be used together")
	}
	if o.IDFile != "" && o.DryRun {
		// A dry run's ID is provisional: the add itself assigns another.
		return errors.New("--id-file and --dry-run cannot be used together")
	}
	return nil
}

// checkName refuses a new member's name that clusterd would refuse, or that cannot travel.
func checkName(name string) error {
	// The one rule for names, clusterd's too: a name it would refuse is refused before sending.
	if err := membership.ValidateName(name); err != nil {
		return err
	}
	// Beyond the rule, the wire: the name travels as gRPC metadata, which carries printable
	// ASCII only.
	if strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r > '~' }) {
		return fmt.Errorf("member name %q: clusterctl sends the name as gRPC metadata, which carries printable ASCII only", name)
	}
	return nil
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
	if o.IDFile != "" {
		// Created before the add, so that a file that cannot be written refuses the command
		// before anything changed.
		if err := os.WriteFile(o.IDFile, nil, 0o644); err != nil {
			return &usageError{fmt.Errorf("--id-file: %w", err)}
		}
	}
	r, err := o.add(ctx, c)
	if err != nil {
		if o.IDFile != "" {
			// No ID to fill it with: an empty file left behind would be read as one.
			_ = os.Remove(o.IDFile)
		}
		return err
	}
	if o.IDFile != "" {
		if err := os.WriteFile(o.IDFile, []byte(client.FormatID(r.ID)+"\n"), 0o644); err != nil {
			return fmt.Errorf("member %s added, but --id-file: %w", client.FormatID(r.ID), err)
		}
	}
	if err := o.Printer.MemberAdd(o.Out, r); err != nil {
		return err
	}
	// In env format, whose stdout is the environment alone, the ID goes to stderr.
	return o.Printer.MemberAddNote(o.Err, r)
}

// add adds the member or, with --if-not-exists, finds it there already.
func (o *memberAddOptions) add(ctx context.Context, c *client.Client) (*client.AddResult, error) {
	if o.IfNotExists {
		// Looked for before the add: etcd does not refuse a second member of the same name, so
		// its refusal cannot be what finds a conflict.
		if found, err := o.existing(ctx, c); err != nil || found != nil {
			return found, err
		}
	}
	r, err := c.MemberAdd(ctx, o.Name, o.PeerURLs, o.Learner)
	if o.IfNotExists && (errors.Is(err, rpcerr.ErrMemberNameExists) || errors.Is(err, rpcerr.ErrPeerURLExists)) {
		// Added by someone else since the list was read.
		if found, ferr := o.existing(ctx, c); ferr != nil || found != nil {
			return found, ferr
		}
	}
	return r, o.withHolder(ctx, c, err)
}

// withHolder is err (nil when the add was accepted), and when it is the refusal of a peer URL in
// use, the member that holds it after the server's words, from one member list of the member
// that refused; err alone when the list cannot be read or names no holder.
func (o *memberAddOptions) withHolder(ctx context.Context, c *client.Client, err error) error {
	if !errors.Is(err, rpcerr.ErrPeerURLExists) || is[*client.MemberDiffersError](err) {
		return err
	}
	members, lerr := c.LocalMemberList(ctx)
	if lerr != nil {
		return err
	}
	if m := client.PeerURLHolder(members, o.PeerURLs); m != nil {
		return &client.MemberDiffersError{Name: o.Name, PeerURLs: o.PeerURLs, Other: *m, Refusal: err}
	}
	return err
}

// existing is the result of an add that finds its member there already, read from the member
// list, or the refusal saying what differs (a member with the name and other peer URLs, or one
// of the peer URLs under another name); nil and no error when no member is in the way.
func (o *memberAddOptions) existing(ctx context.Context, c *client.Client) (*client.AddResult, error) {
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return nil, err
	}
	m, err := client.FindAdded(list.Members, o.Name, o.PeerURLs)
	if err != nil || m == nil {
		return nil, err
	}
	return client.AddedResult(list, *m, o.Name), nil
}
