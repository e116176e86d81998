package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/spf13/cobra"
)

// A waiting promotion (member promote --wait, member replace) asks again promoteRetry after each
// refusal for its first promoteFastAttempts: a learner started at once is in sync tens of
// milliseconds after its process starts, and the server answers at once, clusterd as etcd. After
// those attempts the interval doubles up to promoteRetryInterval, for a learner with much to
// catch up or not started yet. A refused attempt costs the leader one check and the heartbeat
// round that confirms its refusal.
const (
	promoteRetry         = 5 * time.Millisecond
	promoteFastAttempts  = 40
	promoteRetryInterval = 500 * time.Millisecond
)

// promoteRetryAfter is the interval from promotion attempt attempt to the next.
func promoteRetryAfter(attempt int) time.Duration {
	if attempt < promoteFastAttempts {
		return promoteRetry
	}
	return min(promoteRetry<<min(attempt-promoteFastAttempts+1, 8), promoteRetryInterval)
}

// progressRepeat is how often a progress line that says the same as the one before is printed
// again: a line a second for minutes of waiting on an unchanged state is noise, and nothing new.
const progressRepeat = 5 * time.Second

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
the leader's (exit 13); with --wait, clusterctl asks again, printing on stderr how far the
learner is behind, until it is promoted or the duration (1m when none is given) is over: every
5ms for the first 40 attempts (a learner started at once catches up within tens of
milliseconds), then at doubling intervals up to every 500ms.

With --dry-run, clusterd runs every check without promoting and clusterctl prints the voters and
quorum before and after and whether the promotion would be accepted.`,
		Example: `  clusterctl member promote infra3
  clusterctl member promote 96dbf27657837fe1 --wait=2m
  clusterctl member promote infra3 --dry-run`,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, o.kind, o),
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
		if o.Wait == 0 {
			return c.MemberPromote(cctx, id)
		}
		return o.promoteUntil(ctx, c, id, deadline, o.progress)
	}, (*client.Client).MemberPromoteDryRun)
}

// promoteUntil promotes learner id, asking again while it is not in sync (promoteRetryAfter),
// until deadline. Before each attempt after the first, a progress line goes to stderr, at most
// once per promoteRetryInterval: the figures cost a member list and two status calls, more than
// an attempt, and a line every few milliseconds tells the reader nothing more. A line that says
// the same as the last one printed waits progressRepeat. No attempt starts after the deadline.
// Only "not in sync" is retried: it is a refusal, so nothing changed and asking again is safe.
// The last refusal says so of a learner that never started.
func (g *Globals) promoteUntil(ctx context.Context, c *client.Client, id uint64, deadline time.Time,
	progress func(context.Context, *client.Client, uint64) string) (*client.ChangeResult, error) {
	var nextLine time.Time // when the next progress line is due; the first is due at once
	var last string        // the last progress line printed
	var lastAt time.Time
	for attempt := 0; ; attempt++ {
		start := time.Now()
		// Each attempt has its own --command-timeout; the deadline bounds them all.
		actx, cancel := g.withTimeout(ctx)
		r, err := c.MemberPromote(actx, id)
		cancel()
		if !errors.Is(err, rpcerr.ErrLearnerNotReady) {
			return r, err
		}
		next := start.Add(promoteRetryAfter(attempt))
		if !next.Before(deadline) {
			return nil, g.notPromoted(ctx, c, id, err)
		}
		if !time.Now().Before(nextLine) {
			if line := progress(ctx, c, id); line != last || time.Since(lastAt) >= progressRepeat {
				fmt.Fprintln(g.Err, line)
				last, lastAt = line, time.Now()
			}
			nextLine = time.Now().Add(promoteRetryInterval)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Until(next)):
		}
	}
}

// neverStartedError is the last refusal of a wait for a learner that never started: no process
// has run it since it was added, so it could not catch up, however long the wait.
type neverStartedError struct {
	id  uint64
	err error // the server's refusal: not in sync
}

func (e *neverStartedError) Error() string {
	return fmt.Sprintf("learner %s never started, so it cannot be in sync: %v", client.FormatID(e.id), e.err)
}
func (e *neverStartedError) Unwrap() error { return e.err }

// notPromoted is the refusal a wait ends with: err, said as a *neverStartedError when the
// member list shows the learner never started. A list that cannot be read leaves err as it is.
func (g *Globals) notPromoted(ctx context.Context, c *client.Client, id uint64, err error) error {
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	list, lerr := c.MemberList(ctx, false)
	if lerr != nil {
		return err
	}
	for _, m := range list.Members {
		if m.ID == id && !m.Started {
			return &neverStartedError{id: id, err: err}
		}
	}
	return err
}

// progress says how far the learner is behind. It is advice to the person waiting: when the
// figures cannot be had, it says why and the wait goes on.
func (g *Globals) progress(ctx context.Context, c *client.Client, id uint64) string {
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	p, err := c.FetchLearnerProgress(ctx, id)
	if err != nil {
		return fmt.Sprintf("learner %s not in sync yet: %v", client.FormatID(id), err)
	}
	return fmt.Sprintf("learner %s not in sync yet: %d entries behind the leader (applied %d of %d, %.1f%%)",
		client.FormatID(id), p.Behind(), p.LearnerApplied, p.LeaderIndex, p.Percent())
}
