package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

// promoteRetryInterval is how often --wait asks again. A learner started on an empty data
// directory catches up within a fraction of a second on a small cluster, so a short interval
// promotes it soon after; each attempt costs the leader one refused proposal check.
const promoteRetryInterval = 500 * time.Millisecond

type memberPromoteOptions struct {
	memberChangeOptions
	// Wait is how long to keep retrying while the learner is not in sync; 0 tries once.
	Wait time.Duration
}

func newMemberPromoteCmd(g *Globals) *cobra.Command {
	o := &memberPromoteOptions{memberChangeOptions: memberChangeOptions{Globals: g, kind: printer.MemberPromote}}
	cmd := &cobra.Command{
		Use:   "promote <id|name> [--wait[=DURATION] | --dry-run]",
		Short: "Promote a learner to a voting member",
		Long: `Promote a learner to a voting member. The server refuses while the learner's log is behind
the leader's (exit 13); with --wait, clusterctl asks again every 500ms, printing on stderr how
far the learner is behind, until it is promoted or the duration (1m when none is given) is over.

With --dry-run, clusterd runs every check without promoting and clusterctl prints the voters and
quorum before and after and whether the promotion would be accepted.`,
		Example: `  clusterctl member promote infra3
  clusterctl member promote 96dbf27657837fe1 --wait=2m
  clusterctl member promote infra3 --dry-run`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o),
	}
	cmd.Flags().DurationVar(&o.Wait, "wait", 0, "retry for this long while the learner is not in sync yet")
	cmd.Flags().Lookup("wait").NoOptDefVal = "1m"
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	return cmd
}

func (o *memberPromoteOptions) validate(args []string) error {
	if o.Wait < 0 {
		return fmt.Errorf("--wait must not be negative, not %s", o.Wait)
	}
	if o.DryRun && o.Wait > 0 {
		// A dry run answers once; waiting for a verdict to change is what --wait does for real.
		return errors.New("--dry-run and --wait cannot be used together")
	}
	return o.memberChangeOptions.validate(args)
}

func (o *memberPromoteOptions) run(ctx context.Context) error {
	deadline := time.Now().Add(o.Wait)
	return o.change(ctx, func(c *client.Client, cctx context.Context, id uint64) (*client.ChangeResult, error) {
		r, err := c.MemberPromote(cctx, id)
		if !errors.Is(err, client.ErrLearnerNotReady) {
			return r, err
		}
		return o.promoteUntil(ctx, c, id, deadline, func(int) time.Duration { return promoteRetryInterval })
	}, (*client.Client).MemberPromoteDryRun)
}

// promoteUntil promotes learner id, asking again after interval(attempt) while it is not in
// sync, until deadline. A progress line goes to stderr before the first wait and then before a
// wait at most once per promoteRetryInterval: the figures cost a member list and two status
// calls, more than an attempt, and a line every few milliseconds tells the reader nothing more.
// Bounded by the deadline: every pass waits first. Only "not in sync" is retried: it is a
// refusal, so nothing changed and asking again is safe.
func (g *Globals) promoteUntil(ctx context.Context, c *client.Client, id uint64, deadline time.Time, interval func(attempt int) time.Duration) (*client.ChangeResult, error) {
	err := error(client.ErrLearnerNotReady)
	var r *client.ChangeResult
	var nextLine time.Time // when the next progress line is due; the first is due at once
	for attempt := 0; errors.Is(err, client.ErrLearnerNotReady); attempt++ {
		wait := interval(attempt)
		if !time.Now().Add(wait).Before(deadline) {
			return nil, err
		}
		if !time.Now().Before(nextLine) {
			g.progress(ctx, c, id)
			nextLine = time.Now().Add(promoteRetryInterval)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		r, err = g.promoteOnce(ctx, c, id)
	}
	return r, err
}

// promoteOnce gives each retry its own --command-timeout; the deadline bounds them all.
func (g *Globals) promoteOnce(ctx context.Context, c *client.Client, id uint64) (*client.ChangeResult, error) {
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	return c.MemberPromote(ctx, id)
}

// progress prints how far the learner is behind. It is advice to the person waiting: when the
// figures cannot be had, it says why and the wait goes on.
func (g *Globals) progress(ctx context.Context, c *client.Client, id uint64) {
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	p, err := c.FetchLearnerProgress(ctx, id)
	if err != nil {
		fmt.Fprintf(g.Err, "learner %s not in sync yet: %v\n", client.FormatID(id), err)
		return
	}
	fmt.Fprintf(g.Err, "learner %s not in sync yet: %d entries behind the leader (applied %d of %d, %.1f%%)\n",
		client.FormatID(id), p.Behind(), p.LearnerApplied, p.LeaderIndex, p.Percent())
}
