package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/wire"
	"github.com/spf13/cobra"
)

// replaceRetry is how far apart member replace starts two promotions of a new member that is not
// in sync yet, for its first replaceFastAttempts, where the server answers at once (real etcd;
// clusterd's leader waits for the learner itself): a learner started at once is in sync tens of
// milliseconds after its process starts, and every millisecond between its catching up and the
// next attempt is one the replacement waits for nothing. A refused attempt costs the leader one
// check. After those attempts the interval doubles up to promoteRetryInterval, for a learner with
// much to catch up.
const (
	replaceRetry        = 5 * time.Millisecond
	replaceFastAttempts = 40
)

// replaceRetryAfter is the interval from promotion attempt attempt to the next of member replace.
func replaceRetryAfter(attempt int) time.Duration {
	if attempt < replaceFastAttempts {
		return replaceRetry
	}
	return min(replaceRetry<<min(attempt-replaceFastAttempts+1, 8), promoteRetryInterval)
}

type memberReplaceOptions struct {
	*Globals
	PeerURLsFlag string
	WaitTimeout  time.Duration
	DryRun       bool

	OldRef   string
	Name     string
	PeerURLs []string
}

func newMemberReplaceCmd(g *Globals) *cobra.Command {
	o := &memberReplaceOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "replace <old-id|old-name> <new-name> --peer-urls=URL[,URL...] [--wait-timeout=DURATION] [--dry-run]",
		Short: "Replace a member by a new one: add it as a learner, promote it, remove the old one",
		Long: `Replace a member (a failed machine, or one to retire) by a new member, in four steps, each
reported on stderr:

  1. add the new member as a learner, and print the environment its process starts with
     (member add's output; -w env prints the environment alone, -w json a line that holds it);
  2. wait, up to --wait-timeout, for the new member to start and catch up, printing how far it is
     behind, and promote it;
  3. if the old member leads, move leadership away from it: while the new member starts, to an
     established voter that answers and follows it, else after the promotion to the new member;
  4. remove the old member.

Interrupted anywhere, the same command line run again finds what is done and goes on: a member
with the new name and exactly these peer URLs is taken as added (its environment is printed
again), a voter as promoted, an old member that is gone as removed.

With -w json, stdout holds one JSON object a line as the steps are done: an "added" line as soon as
the learner is added or found added, with the environment under "env", so that a script can start
the new member while the command waits; and a "replaced" line at the end, with the old and the new
member and every step's state (done, doneAlready, notNeeded).

With --dry-run (clusterd only), clusterd judges the add and the removal against the cluster now,
and clusterctl prints the voters, quorum and fault tolerance after each step. Against clusterd the
same check runs before the first change, and a plan that would be refused changes nothing.`,
		Example: `  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 -w env > infra3.env
  # on 10.0.0.4: (set -a; . ./infra3.env; exec clusterd --data-dir ...) (the command waits for it)

  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 -w json > replace.jsonl
  # its first line, printed before the wait: jq -r 'select(.event == "added").env' replace.jsonl

  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 --dry-run`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o),
	}
	cmd.Flags().StringVar(&o.PeerURLsFlag, "peer-urls", "", "the new member's peer URLs, comma-separated")
	cmd.Flags().DurationVar(&o.WaitTimeout, "wait-timeout", 5*time.Minute, "how long to wait for the new member to start and catch up")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberReplaceOptions) validate(args []string) error {
	switch {
	case len(args) == 0 || args[0] == "":
		return errNoID
	case len(args) == 1 || args[1] == "":
		return errNoName
	case len(args) > 2:
		return tooManyArgs(args[2:])
	}
	o.OldRef = args[0]
	if err := checkName(args[1]); err != nil {
		return err
	}
	if args[1] == o.OldRef {
		// Names are unique while both members are in the cluster, and once the old one is gone a
		// second run would take the new member for the old.
		return fmt.Errorf("the new member needs a name of its own: %q is the member to replace", o.OldRef)
	}
	if o.WaitTimeout <= 0 {
		return fmt.Errorf("--wait-timeout must be positive, not %s", o.WaitTimeout)
	}
	var err error
	o.Name = args[1]
	if o.PeerURLs, err = peerURLs(o.PeerURLsFlag); err != nil {
		return err
	}
	return checkFormat(o.Printer, printer.MemberReplace, o.DryRun)
}

// step writes the line of one step on stderr.
func (o *memberReplaceOptions) step(n int, format string, a ...any) {
	fmt.Fprintf(o.Err, "step %d of 4: "+format+"\n", append([]any{n}, a...)...)
}

func (o *memberReplaceOptions) run(ctx context.Context) error {
	// Every change it makes says so in clusterd's membership history.
	ctx = client.WithVia(ctx, wire.ViaMemberReplace)
	c, err := o.Client()
	if err != nil {
		return err
	}
	r, err := o.find(ctx, c)
	if err != nil {
		return err
	}
	if err := o.checkPlan(ctx, c, r); err != nil || o.DryRun {
		return err
	}
	res := &printer.ReplaceResult{OldRef: o.OldRef, Old: r.Old, Latest: *r.List}
	if err := o.add(ctx, c, r, res); err != nil {
		return err
	}
	early := o.startEarlyMove(ctx, c, r, res.Added)
	defer o.endEarlyMove(early)
	promoted, err := o.promote(ctx, c, r, res, early)
	if err != nil {
		return err
	}
	if r.Old == nil {
		o.step(3, "%s is gone already: leadership not moved", o.OldRef)
		res.Record(client.PlanStep{Action: client.StepMove, Skip: true}, nil)
		o.step(4, "%s is gone already: removal skipped", o.OldRef)
		res.Record(client.PlanStep{Action: client.StepRemove, Done: true}, nil)
	} else {
		via, err := o.moveLeader(ctx, c, promoted, r.OldID, res, early)
		if err != nil {
			return err
		}
		if err := o.remove(ctx, via, r.OldID, res); err != nil {
			return err
		}
	}
	return o.Printer.ReplaceDone(o.Out, res)
}

// find reads where the replacement stands from one linearizable member list.
func (o *memberReplaceOptions) find(ctx context.Context, c *client.Client) (*client.Replacement, error) {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return nil, err
	}
	return client.FindReplacement(list, o.OldRef, o.Name, o.PeerURLs)
}

// checkPlan asks clusterd to judge the plan and returns its refusal; with --dry-run it also
// prints the plan. Real etcd cannot judge a change without making it: then the plan is
// not checked, and each step meets the server's own checks as it is sent.
func (o *memberReplaceOptions) checkPlan(ctx context.Context, c *client.Client, r *client.Replacement) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	plan, err := c.ReplaceDryRun(ctx, r, o.Name, o.PeerURLs)
	var unsupported *client.DryRunUnsupportedError
	switch {
	case errors.As(err, &unsupported) && !o.DryRun:
		return nil
	case err != nil:
		return err
	case o.DryRun:
		if err := o.Printer.ReplacePlan(o.Out, plan); err != nil {
			return err
		}
	}
	return plan.Err
}

// add adds the new member as a learner unless it is there already, and prints member add's
// output either way (in json, the line with the environment).
func (o *memberReplaceOptions) add(ctx context.Context, c *client.Client, r *client.Replacement, res *printer.ReplaceResult) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	if r.New != nil {
		o.step(1, "%s (%s) is in the cluster already: add skipped", o.Name, client.FormatID(r.New.ID))
		res.Added = client.AddedResult(r.List, *r.New, o.Name)
		res.Record(client.PlanStep{Action: client.StepAdd, Done: true}, nil)
		return o.Printer.ReplaceAdd(o.Out, res)
	}
	added, err := c.MemberAdd(ctx, o.Name, o.PeerURLs, true)
	if err != nil {
		return err
	}
	o.step(1, "added %s (%s) as learner", o.Name, client.FormatID(added.ID))
	res.Added = added
	res.Record(client.PlanStep{Action: client.StepAdd}, &added.ChangeResult)
	return o.Printer.ReplaceAdd(o.Out, res)
}

// promote waits for the new member to catch up and promotes it, unless it is a voter already.
// It returns the promotion's answer, nil when skipped. The promotion goes to the leader the early
// move handed over to, once the move has ended (early.leader).
func (o *memberReplaceOptions) promote(ctx context.Context, c *client.Client, r *client.Replacement, res *printer.ReplaceResult, early *earlyMove) (*client.ChangeResult, error) {
	id := res.Added.ID
	if r.New != nil && !r.New.IsLearner {
		o.step(2, "%s (%s) is a voter already: promotion skipped", o.Name, client.FormatID(id))
		res.Record(client.PlanStep{Action: client.StepPromote, Done: true}, nil)
		return nil, nil
	}
	fmt.Fprintf(o.Err, "waiting up to %s for %s to start and catch up\n", o.WaitTimeout, o.Name)
	promoted, err := o.promoteUntil(ctx, early.leader(c), id, time.Now().Add(o.WaitTimeout), replaceRetryAfter)
	if err != nil {
		return nil, err
	}
	o.step(2, "promoted %s (%s)", o.Name, client.FormatID(id))
	res.Record(client.PlanStep{Action: client.StepPromote}, promoted)
	return promoted, o.Printer.ReplaceChange(o.Out, printer.MemberPromote, promoted)
}

// remove removes the old member; one that is gone already counts as removed.
func (o *memberReplaceOptions) remove(ctx context.Context, c *client.Client, oldID uint64, res *printer.ReplaceResult) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	removed, err := c.MemberRemove(ctx, oldID)
	if errors.Is(err, client.ErrMemberNotFound) {
		o.step(4, "%s is gone already: removal skipped", o.OldRef)
		res.Record(client.PlanStep{Action: client.StepRemove, Done: true}, nil)
		return nil
	}
	if err != nil {
		return err
	}
	o.step(4, "removed %s (%s)", o.OldRef, client.FormatID(oldID))
	res.Record(client.PlanStep{Action: client.StepRemove}, removed)
	return o.Printer.ReplaceChange(o.Out, printer.MemberRemove, removed)
}
