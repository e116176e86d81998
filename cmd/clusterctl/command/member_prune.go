package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
	"github.com/spf13/cobra"
)

// pruneUnreachableFor is member prune's default --unreachable-for: longer than an election and
// than etcd's window after one, short enough for a person waiting at a terminal.
const pruneUnreachableFor = 30 * time.Second

// pruneEvery is how often member prune asks the members it watches again.
const pruneEvery = time.Second

type memberPruneOptions struct {
	*Globals
	UnreachableFor time.Duration
	UnstartedFor   time.Duration
	DryRun         bool
}

func newMemberPruneCmd(g *Globals) *cobra.Command {
	o := &memberPruneOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "prune [--unreachable-for=DURATION] [--unstarted-for=DURATION] [--dry-run]",
		Short: "Remove members that are dead: not answering, or added and never started",
		Long: `Remove the members that are dead, one at a time, one line each:

  - voters and learners that have started and that every source finds gone for
    --unreachable-for (30s when not given): once a second the command asks each member on its
    client URLs, every endpoint given (an answer naming the member), and the leader's view of its
    peers (etcd_network_active_peers on the leader's /metrics); a member that answers once is
    kept, any other is judged by the last question, and one the client cannot reach but the
    cluster can is kept with a line on stderr;
  - with --unstarted-for, members added and still not started after that long, as this command
    sees them (without it, unstarted members are kept: a member being added is unstarted too).

The command waits only while a member does not answer or is unstarted. Each removal goes through
the strict quorum check: a voter is removed only when the voters that answer still form a quorum
of the voters left, and never the last voter. A member that would fail that check is kept, and
the command exits 12 after removing the others. Against etcd, a removal refused for etcd's
5-second window after a start or an election is asked again for up to 10s.

With --dry-run, the command watches as it would, lists what it would remove and what it would
keep, each with its evidence, and removes nothing; it works against etcd too (the decision is the
command's, from member lists, status calls and the leader's /metrics).`,
		Example: `  clusterctl member prune --dry-run
  clusterctl member prune --unreachable-for=2m
  clusterctl member prune --unstarted-for=10m`,
		Args: noArgs,
		RunE: runE(g, printer.MemberPrune, o),
	}
	cmd.Flags().DurationVar(&o.UnreachableFor, "unreachable-for", pruneUnreachableFor, "remove a started member that does not answer for this long")
	cmd.Flags().DurationVar(&o.UnstartedFor, "unstarted-for", 0, "remove a member still not started after this long (0: keep unstarted members)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "list what would be removed and why, and remove nothing")
	return cmd
}

func (o *memberPruneOptions) validate([]string) error {
	if o.UnreachableFor <= 0 {
		return fmt.Errorf("--unreachable-for must be positive, not %s", o.UnreachableFor)
	}
	if o.UnstartedFor < 0 {
		return fmt.Errorf("--unstarted-for must not be negative, not %s", o.UnstartedFor)
	}
	return nil
}

// deadMember is a member member prune found dead, and why.
type deadMember struct {
	m      client.Member
	reason string
	seen   time.Duration
	// ev is what every source said at the last question, evidence the same in words; neither
	// for an unstarted member. undecided is a member kept because not every source could speak.
	ev        client.Liveness
	evidence  string
	undecided bool
}

func (o *memberPruneOptions) run(ctx context.Context) error {
	// Every removal it makes says so in clusterd's membership history.
	ctx = client.WithVia(ctx, wire.ViaMemberPrune)
	c, err := o.Client()
	if err != nil {
		return err
	}
	list, err := o.list(ctx, c)
	if err != nil {
		return err
	}
	w, err := o.watch(ctx, c, list)
	if err != nil {
		return err
	}
	err = o.prune(ctx, c, w.latest, w.dead, w.alive)
	// What is kept is said after what is removed; a failure to say it comes first.
	return cmp.Or(o.keep(w), err)
}

// list reads the members from a linearizable member list: a removal needs a leader anyway.
func (o *memberPruneOptions) list(ctx context.Context, c *client.Client) (*client.ListResult, error) {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	return c.MemberList(ctx, true)
}

// watched is what member prune's watch found.
type watched struct {
	// dead are the members to remove, in order (learners first, then voters); alive the IDs of
	// the members that answered, or that some source found alive at the last question; latest
	// the member list read last.
	dead   []deadMember
	alive  map[uint64]bool
	latest *client.ListResult
	// kept are the started members kept, each with its evidence, in the list's order.
	kept []deadMember
}

// watch asks every source about every started member (client.Liveness: its own client URLs,
// the given endpoints, the leader's view), once a second, until each has answered once or
// --unreachable-for has passed, and watches the unstarted members for --unstarted-for. A member
// that answered is kept; any other is judged by the last question: dead only when every source
// agreed it is gone, kept when the leader still hears it or its view could not be read.
func (o *memberPruneOptions) watch(ctx context.Context, c *client.Client, list *client.ListResult) (*watched, error) {
	start := time.Now()
	w := &watched{alive: map[uint64]bool{}}
	last := map[uint64]client.Liveness{}
	unstarted := map[uint64]bool{}
	for _, m := range list.Members {
		if !m.Started && o.UnstartedFor > 0 {
			unstarted[m.ID] = true
		}
	}
	watchUnstarted := len(unstarted) > 0
	if watchUnstarted {
		fmt.Fprintf(o.Err, "%d member(s) not started: watching for up to %s\n", len(unstarted), o.UnstartedFor)
	}
	said := map[uint64]bool{}
	for {
		pending := o.ask(ctx, c, list, w.alive, last)
		for _, m := range pending {
			if !said[m.ID] {
				fmt.Fprintf(o.Err, "%s (%s) does not answer: watching it for up to %s\n", orID(m), client.FormatID(m.ID), o.UnreachableFor)
				said[m.ID] = true
			}
		}
		elapsed := time.Since(start)
		if (len(pending) == 0 || elapsed >= o.UnreachableFor) && (!watchUnstarted || elapsed >= o.UnstartedFor) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pruneEvery):
		}
	}
	seen := time.Since(start).Truncate(time.Second)
	// The list again: a member may have started, been removed or been added meanwhile.
	latest, err := o.list(ctx, c)
	if err != nil {
		return nil, err
	}
	w.latest = latest
	for id, ev := range last {
		// A live voter for the quorum check, whichever source says so.
		w.alive[id] = w.alive[id] || ev.Alive()
	}
	o.judge(w, list, last, unstarted, seen)
	return w, nil
}

// judge sorts the members of w.latest that list (the first list) had: dead started members,
// those every source agreed at the last question (last) are gone, after seen has reached
// --unreachable-for; dead unstarted ones, still unstarted after --unstarted-for; kept, every
// other started member asked, with its evidence.
func (o *memberPruneOptions) judge(w *watched, list *client.ListResult, last map[uint64]client.Liveness, unstarted map[uint64]bool, seen time.Duration) {
	var learners, voters []deadMember
	for _, m := range w.latest.Members {
		var d *deadMember
		ev, asked := last[m.ID]
		wasStarted := slices.ContainsFunc(list.Members, func(x client.Member) bool { return x.ID == m.ID && x.Started })
		switch {
		case m.Started && asked && !w.alive[m.ID] && ev.Gone() && seen >= o.UnreachableFor && wasStarted:
			d = &deadMember{m: m, reason: printer.PruneUnreachable, seen: seen, evidence: ev.Evidence(w.latest.Members)}
		case !m.Started && unstarted[m.ID] && seen >= o.UnstartedFor:
			d = &deadMember{m: m, reason: printer.PruneUnstarted, seen: seen}
		case m.Started && asked:
			w.kept = append(w.kept, deadMember{m: m, reason: printer.PruneLive, ev: ev, evidence: ev.Evidence(w.latest.Members), undecided: !w.alive[m.ID]})
		}
		switch {
		case d == nil:
		case m.IsLearner:
			learners = append(learners, *d)
		default:
			voters = append(voters, *d)
		}
	}
	w.dead = append(learners, voters...)
}

// ask gathers every source's word about each started member that has not answered yet, all at
// once; it marks those that answered (on their client URLs, or as themselves on an endpoint) and
// returns the others, whose evidence it keeps in last.
func (o *memberPruneOptions) ask(ctx context.Context, c *client.Client, list *client.ListResult, alive map[uint64]bool, last map[uint64]client.Liveness) []client.Member {
	var pending []client.Member
	for _, m := range list.Members {
		if m.Started && !alive[m.ID] {
			pending = append(pending, m)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	evidence := c.Liveness(ctx, list, pending, answerWithin)
	var still []client.Member
	for _, m := range pending {
		ev := *evidence[m.ID]
		last[m.ID] = ev
		// An answer from the member itself proves it runs; the leader's view lags by up to an
		// election timeout (a member killed a moment ago is still counted), so a member alive
		// by it alone is asked again until the window ends, and judged by the last question.
		if ev.OwnURL || ev.Endpoint != "" || ev.Leads {
			alive[m.ID] = true
		} else {
			still = append(still, m)
		}
	}
	return still
}

// keep says what the run keeps: with --dry-run, every started member kept and its evidence, on
// stdout; otherwise one line on stderr for each member the client cannot reach on its client
// URLs but the cluster can, or that not every source could judge.
func (o *memberPruneOptions) keep(w *watched) error {
	for _, k := range w.kept {
		if o.DryRun {
			line := printer.Pruned{ClusterID: w.latest.Header.ClusterID, Member: k.m, Reason: k.reason, Evidence: k.evidence, DryRun: true}
			if err := o.Printer.Prune(o.Out, line); err != nil {
				return err
			}
			continue
		}
		switch {
		case k.undecided:
			fmt.Fprintf(o.Err, "kept %s (%s): not every source could judge it: %s\n", orID(k.m), client.FormatID(k.m.ID), k.evidence)
		case !k.ev.OwnURL:
			fmt.Fprintf(o.Err, "kept %s (%s): the cluster reaches it where this command cannot: %s\n", orID(k.m), client.FormatID(k.m.ID), k.evidence)
		}
	}
	return nil
}

// prune removes the dead members one at a time, each only if the voters that answer still form a
// quorum of the voters left; it returns the refusal of the first one kept for that, after the
// others.
func (o *memberPruneOptions) prune(ctx context.Context, c *client.Client, list *client.ListResult, dead []deadMember, answering map[uint64]bool) error {
	members := list.Members
	var kept error
	for _, d := range dead {
		if !d.m.IsLearner {
			if err := quorumAfter(members, d.m, answering); err != nil {
				kept = cmp.Or(kept, err)
				fmt.Fprintf(o.Err, "kept %s (%s): %v\n", orID(d.m), client.FormatID(d.m.ID), err)
				continue
			}
		}
		line := printer.Pruned{ClusterID: list.Header.ClusterID, Member: d.m, Reason: d.reason, For: d.seen, Evidence: d.evidence, DryRun: o.DryRun}
		if !o.DryRun {
			removed, err := o.removeWaiting(ctx, c, d.m.ID, orID(d.m))
			if errors.Is(err, rpcerr.ErrMemberNotFound) {
				continue // removed by someone else meanwhile
			}
			if err != nil {
				return err
			}
			members = removed.Members
		} else {
			members = slices.DeleteFunc(slices.Clone(members), func(m client.Member) bool { return m.ID == d.m.ID })
		}
		if err := o.Printer.Prune(o.Out, line); err != nil {
			return err
		}
	}
	return kept
}

// quorumAfter refuses the removal of voter v from members when the voters left that answer
// would be short of a quorum of the voters left, or when v is the last voter.
func quorumAfter(members []client.Member, v client.Member, answering map[uint64]bool) error {
	voters, live := 0, 0
	for _, m := range members {
		if m.IsLearner || m.ID == v.ID {
			continue
		}
		voters++
		if answering[m.ID] {
			live++
		}
	}
	if voters == 0 {
		return fmt.Errorf("it is the last voter (%w)", rpcerr.ErrNotEnoughStartedMembers)
	}
	if q := voters/2 + 1; live < q {
		return fmt.Errorf("%d of the %d voters left answer, short of their quorum of %d (%w)", live, voters, q, rpcerr.ErrNotEnoughStartedMembers)
	}
	return nil
}

// orID is a member's name, or, for an etcd member not started yet, which has none, its ID.
func orID(m client.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return client.FormatID(m.ID)
}
