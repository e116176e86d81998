package command

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

type memberHistoryOptions struct {
	*Globals
	Member      string
	Since       string
	Limit       int
	Consistency string
	since       time.Time // Since, parsed by validate
}

func newMemberHistoryCmd(g *Globals) *cobra.Command {
	o := &memberHistoryOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show who changed the membership, when, and at which raft index (clusterd only)",
		Long: `Show the membership changes clusterd applied, oldest first: when the leader proposed each,
its raft index, the change (add, add-learner, remove, update, promote, publish), the member's ID
and name, and who asked (the client certificate's CN, the client's address, the clusterctl
command; or clusterd itself). clusterd keeps the newest --max-history changes; json says how
many older ones it dropped. etcd keeps no history: against it the command exits 32.`,
		Example: `  clusterctl member history -w table
  clusterctl member history --member infra1 --since 2026-11-26T00:00:00Z
  clusterctl member history --since 1h
  clusterctl member history --limit 1 -w json | jq -r '.history[0].by'`,
		Args: noArgs,
		RunE: runE(g, printer.MemberHistory, o),
	}
	cmd.Flags().StringVar(&o.Member, "member", "", "only the changes of this member: its ID or name (a removed member's too)")
	cmd.Flags().StringVar(&o.Since, "since", "", "only the changes proposed at or after this time: RFC 3339 (2026-11-26T15:04:05Z), or a duration back from now (90m, 24h)")
	cmd.Flags().IntVar(&o.Limit, "limit", 0, "only the newest N changes of those selected (0: all)")
	consistencyFlag(cmd, &o.Consistency)
	return cmd
}

func (o *memberHistoryOptions) validate([]string) error {
	if err := checkConsistency(o.Consistency); err != nil {
		return err
	}
	if o.Limit < 0 {
		return fmt.Errorf("--limit %d: must be 0 or more", o.Limit)
	}
	var err error
	if o.Since != "" {
		o.since, err = parseSince(o.Since, time.Now())
	}
	return err
}

// parseSince reads --since: a time in RFC 3339, or a duration back from now, as `docker logs
// --since` takes them, so that "the last hour" needs no date arithmetic at 3 a.m.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: neither an RFC 3339 time such as 2026-11-26T15:04:05Z nor a duration such as 90m", s)
}

func (o *memberHistoryOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	r, err := c.MemberHistory(ctx, client.HistoryQuery{
		Linearizable: o.Consistency == "l", Member: o.Member, Since: o.since, Limit: o.Limit,
	})
	if err != nil {
		return err
	}
	return o.Printer.MemberHistory(o.Out, r)
}
