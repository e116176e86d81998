package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/crashpoint"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type memberReplaceOptions struct {
	*Globals
	PeerURLsFlag string
	WaitTimeout  time.Duration
	DryRun       bool

	OldRef   string
	Name     string
	PeerURLs []string
	// flags are the command's flags, for the ones a printed next step carries.
	flags *pflag.FlagSet

	// order is the steps in the order this run makes them: liveOrder, or deadOrder once the old
	// member is found dead.
	order []string
}

// The orders of the steps: a live old member is replaced add first, as it still counts towards
// the quorum; a dead one is removed first, since etcd refuses every change, a learner's add
// included, while a voter is down.
var (
	liveOrder = []string{client.StepAdd, client.StepPromote, client.StepMove, client.StepRemove}
	deadOrder = []string{client.StepRemove, client.StepAdd, client.StepPromote}
)

func newMemberReplaceCmd(g *Globals) *cobra.Command {
	o := &memberReplaceOptions{Globals: g, order: liveOrder}
	cmd := &cobra.Command{
		Use:   "replace <old-id|old-name> <new-name> --peer-urls=URL[,URL...] [--wait-timeout=DURATION] [--dry-run]",
		Short: "Replace a member by a new one: add it as a learner, promote it, remove the old one",
		Long: `Replace a member (a failed machine, or one to retire) by a new member, in four steps, each
reported on stderr:

  1. add the new member as a learner, and print the environment its process starts with
     (member add's output; -w env prints the environment alone, -w json a line that holds it);
  2. wait, up to --wait-timeout, for the new member to start and catch up, printing what happens,
     promote it, and wait until it serves: a started voter that answers a linearizable read
     through its own client URL (exit 35 if it does not in time);
  3. if the old member leads, move leadership from it to the new member;
  4. remove the old member.

An old member is dead when every source agrees, as member prune judges: no answer within 2s on
its client URLs nor as itself on an endpoint given, and the leader's view of its peers
(etcd_network_active_peers on the leader's /metrics) does not count it. A dead one is removed
first, then the new member is added, waited for and promoted (three steps), the order real etcd
accepts while a voter is down. The new member may then have the old one's name and peer URLs (a
machine rebuilt under its old identity, added under a new ID); an old member alive under the new
member's name is refused (exit 11): stop it first. Against etcd, a step refused for etcd's
5-second window after a start or an election ("unhealthy cluster") is asked again for up to 10s.

Interrupted anywhere, the same command line run again finds what is done and goes on: a member
with the new name and exactly these peer URLs is taken as added (its environment is printed
again), a voter as promoted, an old member that is gone as removed. A run stopped between a dead
old member's removal and the add goes on from clusterd's membership history (on etcd: exit 10,
add the new member with member add --learner, then run again).

With -w json, stdout holds one JSON object a line as the steps are done: an "added" line as soon as
the learner is added or found added, with the environment under "env", so that a script can start
the new member while the command waits; and a "replaced" line at the end, with the old and the new
member and every step's state (done, doneAlready, notNeeded).

With --dry-run (clusterd only), clusterd judges the add and the removal against the cluster now,
and clusterctl prints the voters, quorum and fault tolerance after each step, in the order the run
makes them. Against clusterd the same check runs before the first change, and a plan that would
be refused changes nothing.`,
		Example: `  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 -w env > infra3.env
  # on 10.0.0.4: (set -a; . ./infra3.env; exec clusterd --data-dir ...) (the command waits for it)

  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 -w json > replace.jsonl
  # its first line, printed before the wait: jq -r 'select(.event == "added").env' replace.jsonl

  clusterctl member replace infra1 infra3 --peer-urls=http://10.0.0.4:2380 --dry-run`,
		ValidArgsFunction: g.completeMember,
		RunE:              runE(g, printer.MemberReplace, o),
	}
	cmd.Flags().StringVar(&o.PeerURLsFlag, "peer-urls", "", "the new member's peer URLs, comma-separated")
	cmd.Flags().DurationVar(&o.WaitTimeout, "wait-timeout", 5*time.Minute, "how long to wait for the new member to start, catch up and, once promoted, serve")
	addDryRunFlag(cmd.Flags(), &o.DryRun)
	o.flags = cmd.Flags()
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
	o.OldRef, o.Name = args[0], args[1]
	if err := checkName(o.Name); err != nil {
		return err
	}
	if o.WaitTimeout <= 0 {
		return fmt.Errorf("--wait-timeout must be positive, not %s", o.WaitTimeout)
	}
	var err error
	o.PeerURLs, err = peerURLs(o.PeerURLsFlag)
	return err
}

// step writes the line of step s on stderr, numbered in the run's order, and records it with
// answer, the server's answer to it (nil for a step that sent nothing).
func (o *memberReplaceOptions) step(res *printer.ReplaceResult, s client.PlanStep, answer *client.ChangeResult, format string, a ...any) {
	n := slices.Index(o.order, s.Action) + 1
	fmt.Fprintf(o.Err, "step %d of %d: "+format+"\n", append([]any{n, len(o.order)}, a...)...)
	res.Record(s, answer)
}

// goneAlready records the removal of an old member that is gone already as done.
func (o *memberReplaceOptions) goneAlready(res *printer.ReplaceResult) {
	o.step(res, client.PlanStep{Action: client.StepRemove, Done: true}, nil, "%s is gone already: removal skipped", o.OldRef)
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
	if err := o.settle(ctx, c, r); err != nil {
		return err
	}
	if err := o.checkPlan(ctx, c, r); err != nil || o.DryRun {
		return err
	}
	res := &printer.ReplaceResult{OldRef: o.OldRef, Old: r.Old, Latest: *r.List}
	if r.RemoveFirst {
		return o.replaceDead(ctx, c, r, res)
	}
	if err := o.add(ctx, c, r, res); err != nil {
		return err
	}
	promoted, err := o.promote(ctx, c, r, res)
	if err != nil {
		return err
	}
	if r.Old == nil {
		o.step(res, client.PlanStep{Action: client.StepMove, Skip: true}, nil, "%s is gone already: leadership not moved", o.OldRef)
		o.goneAlready(res)
	} else {
		if err := o.moveLeader(ctx, c, promoted, r.OldID, res); err != nil {
			return err
		}
		if _, err := o.remove(ctx, c, r.OldID, res); err != nil {
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
	r, err := client.FindReplacement(list, o.OldRef, o.Name, o.PeerURLs)
	if errors.Is(err, rpcerr.ErrMemberNotFound) {
		// Neither member: a run stopped between a dead old member's removal and the add goes on,
		// when clusterd's history says so; otherwise the old member is not found.
		removal, herr := c.RemovedFirst(ctx, o.OldRef)
		if removal != nil {
			return &client.Replacement{List: list, OldRef: o.OldRef, RemoveFirst: true, Removed: removal}, nil
		}
		// Without a history to read (etcd), the operator is the one who knows: the next step
		// of a stopped run is named, not taken.
		if nf, ok := errors.AsType[*client.NotFoundError](err); ok && is[*client.HistoryUnsupportedError](herr) && len(nf.Unstarted) == 0 {
			next := append([]string{"clusterctl", "--endpoints=" + strings.Join(c.GivenEndpoints(), ",")}, o.clusterctlFlags(o.flags)...)
			return nil, fmt.Errorf("%w, nor %q: if member replace removed %s first and stopped before the add, run %s member add %s --learner --peer-urls=%s, then this command again",
				err, o.Name, o.OldRef, strings.Join(next, " "), o.Name, strings.Join(o.PeerURLs, ","))
		}
	}
	return r, err
}

// answerWithin bounds the question whether a member answers: a dead member refuses the
// connection at once, unless its host is gone too, when this is all the time it costs; a member
// that is up answers in milliseconds, but a TLS handshake on a busy machine can take hundreds of
// them, and a live member taken for dead would be removed before its replacement is added.
const answerWithin = 2 * time.Second

// settle asks every source whether the old member is alive (client.Liveness, as member prune
// does), and so decides the order: one that every source agrees is gone is removed first; one
// that any source finds alive, or that not every source can judge, is replaced add first, where
// a step that would break quorum is refused. In a rebuild, an old member alive with the new
// member's peer URLs is the new one, promoted, only when clusterd's history says member replace
// added it; otherwise it is the old member still running, which is refused (exit 11), as is one
// still running with other peer URLs: rebuilt under its own ID on an empty data directory, a
// member would not start.
func (o *memberReplaceOptions) settle(ctx context.Context, c *client.Client, r *client.Replacement) error {
	if r.Removed != nil {
		o.order = deadOrder
		fmt.Fprintf(o.Err, "%s (%s) was removed first by member replace at raft index %d and nothing was added since: %s is added and promoted\n",
			o.OldRef, client.FormatID(uint64(r.Removed.MemberID)), r.Removed.RaftIndex, o.Name)
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	if r.Old == nil {
		return o.checkRebuiltLearner(ctx, c, r)
	}
	ev := *c.Liveness(ctx, r.List, []client.Member{*r.Old}, answerWithin)[r.OldID]
	r.OldLiveness = &ev
	alive := !ev.Gone()
	stillRunning := fmt.Errorf("member %s (%s) is alive (%s): stop it before replacing it by a member of the same name (%w)",
		o.OldRef, client.FormatID(r.OldID), ev.Evidence(r.List.Members), rpcerr.ErrMemberNameExists)
	if alive && r.SamePeerURLs(o.PeerURLs) {
		replaced, err := c.AddedByReplace(ctx, r.OldID)
		switch {
		case is[*client.HistoryUnsupportedError](err):
			// etcd keeps no history: a finished rebuild and the old member still running look
			// alike. Either way nothing is to be done, and no environment is printed.
			return fmt.Errorf("member %s (%s) is alive (%s) under this name and these peer URLs: nothing to do if member replace rebuilt it already (etcd keeps no history to tell); if not, stop it before replacing it by a member of the same name (%w)",
				o.OldRef, client.FormatID(r.OldID), ev.Evidence(r.List.Members), rpcerr.ErrMemberNameExists)
		case err != nil:
			return err
		case !replaced:
			return stillRunning
		}
	}
	r.Settle(alive, o.PeerURLs)
	switch {
	case r.RemoveFirst:
		o.order = deadOrder
		fmt.Fprintf(o.Err, "%s (%s) is dead (%s): it is removed first, then %s is added and promoted\n",
			o.OldRef, client.FormatID(r.OldID), ev.Evidence(r.List.Members), o.Name)
	case r.Rebuild && r.Old != nil:
		return stillRunning
	}
	return nil
}

// checkRebuiltLearner refuses, in a rebuild, a started learner under the old name and the new
// peer URLs that clusterd's history says member replace did not add: it is the member to
// rebuild, running, not this replacement's new member, and going on would print the
// environment of an ID that has its data. On etcd, which keeps no history, it is taken as the new
// member, as before.
func (o *memberReplaceOptions) checkRebuiltLearner(ctx context.Context, c *client.Client, r *client.Replacement) error {
	if !r.Rebuild || r.New == nil || !r.New.IsLearner || !r.New.Started {
		return nil
	}
	replaced, err := c.AddedByReplace(ctx, r.New.ID)
	switch {
	case is[*client.HistoryUnsupportedError](err):
		return nil
	case err != nil:
		return err
	case !replaced:
		return fmt.Errorf("member %s (%s) is a started learner that member replace did not add: stop it before replacing it by a member of the same name (%w)",
			o.OldRef, client.FormatID(r.New.ID), rpcerr.ErrMemberNameExists)
	}
	return nil
}

// replaceDead replaces a dead old member: it removes it, then adds the new member as a learner,
// waits for it and promotes it. Leadership needs no move: a member that does not answer leads
// nobody for long, and once it is removed the others elect among themselves.
func (o *memberReplaceOptions) replaceDead(ctx context.Context, c *client.Client, r *client.Replacement, res *printer.ReplaceResult) error {
	if r.Old == nil {
		o.goneAlready(res)
	} else {
		// Marked apart in clusterd's history: a run stopped before the add goes on from it.
		removed, err := o.remove(client.WithVia(ctx, wire.ViaMemberReplaceRemoveFirst), c, r.OldID, res)
		if err != nil {
			return err
		}
		if removed != nil {
			r.List = &client.ListResult{Header: removed.Header, Members: removed.Members}
		}
		crashpoint.Hit(crashpoint.ReplaceRemovedFirst)
	}
	if err := o.add(ctx, c, r, res); err != nil {
		return err
	}
	if _, err := o.promote(ctx, c, r, res); err != nil {
		return err
	}
	return o.Printer.ReplaceDone(o.Out, res)
}

// etcdWindow is etcd's HealthInterval: for this long after a member starts, or after a leader
// is elected, etcd's strict reconfiguration check counts the members its leader has not been
// connected to for that long as down, and refuses a change with "unhealthy cluster" although
// every member is up.
const etcdWindow = 5 * time.Second

// windowRetry is how far apart untilHealthy asks again.
const windowRetry = 250 * time.Millisecond

// untilHealthy runs change, a membership change, and while the server refuses it as unhealthy
// runs it again, for up to twice etcd's window: the refusal comes before anything is proposed,
// so asking again is safe. It says so on stderr once. A voter really down is still refused
// after the wait, with the server's answer.
func (g *Globals) untilHealthy(ctx context.Context, what string, change func(context.Context) error) error {
	until := time.Now().Add(2 * etcdWindow)
	for said := false; ; {
		err := change(ctx)
		if !errors.Is(err, rpcerr.ErrUnhealthyCluster) || !time.Now().Add(windowRetry).Before(until) {
			return err
		}
		if !said {
			fmt.Fprintf(g.Err, "%s refused: %v (etcd refuses changes for %s after a member starts or a leader is elected): asking again for up to %s\n",
				what, err, etcdWindow, 2*etcdWindow)
			said = true
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(windowRetry):
		}
	}
}

// removeWaiting removes member id, named name in the progress line, each attempt within
// --command-timeout, waiting out etcd's window (untilHealthy).
func (g *Globals) removeWaiting(ctx context.Context, c *client.Client, id uint64, name string) (*client.ChangeResult, error) {
	var removed *client.ChangeResult
	err := g.untilHealthy(ctx, "the removal of "+name, func(ctx context.Context) (err error) {
		ctx, cancel := g.withTimeout(ctx)
		defer cancel()
		removed, err = c.MemberRemove(ctx, id)
		return err
	})
	return removed, err
}

// checkPlan asks clusterd to judge the plan and returns its refusal; with --dry-run it also
// prints the plan. Real etcd cannot judge a change without making it: then the plan is
// not checked, and each step meets the server's own checks as it is sent.
func (o *memberReplaceOptions) checkPlan(ctx context.Context, c *client.Client, r *client.Replacement) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	plan, err := c.ReplaceDryRun(ctx, r, o.Name, o.PeerURLs)
	switch {
	case is[*client.DryRunUnsupportedError](err) && !o.DryRun:
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
	if r.New != nil {
		res.Added = client.AddedResult(r.List, *r.New, o.Name)
		done := client.PlanStep{Action: client.StepAdd, Done: true}
		if r.Rebuild && r.New.Started && !r.New.IsLearner {
			// A rebuilt member that runs as a voter has its data: its environment, printed
			// again, could only start its ID on an empty data directory, which it does not
			// survive.
			o.step(res, done, nil, "%s (%s) is in the cluster already and has started: add skipped, its environment not printed again", o.Name, client.FormatID(r.New.ID))
			return nil
		}
		o.step(res, done, nil, "%s (%s) is in the cluster already: add skipped", o.Name, client.FormatID(r.New.ID))
		return o.Printer.ReplaceAdd(o.Out, res)
	}
	var added *client.AddResult
	err := o.untilHealthy(ctx, "the add of "+o.Name, func(ctx context.Context) (err error) {
		ctx, cancel := o.withTimeout(ctx)
		defer cancel()
		added, err = c.MemberAdd(ctx, o.Name, o.PeerURLs, true)
		return err
	})
	if err != nil {
		return err
	}
	res.Added = added
	o.step(res, client.PlanStep{Action: client.StepAdd}, &added.ChangeResult, "added %s (%s) as learner", o.Name, client.FormatID(added.ID))
	return o.Printer.ReplaceAdd(o.Out, res)
}

// promote waits for the new member to catch up and promotes it, unless it is a voter already,
// then waits for it to serve (waitServes); --wait-timeout bounds both. It returns the
// promotion's answer, nil when skipped.
func (o *memberReplaceOptions) promote(ctx context.Context, c *client.Client, r *client.Replacement, res *printer.ReplaceResult) (*client.ChangeResult, error) {
	id := res.Added.ID
	deadline := time.Now().Add(o.WaitTimeout)
	if r.New != nil && !r.New.IsLearner {
		o.step(res, client.PlanStep{Action: client.StepPromote, Done: true}, nil, "%s (%s) is a voter already: promotion skipped", o.Name, client.FormatID(id))
		return nil, o.waitServes(ctx, c, id, deadline)
	}
	fmt.Fprintf(o.Err, "waiting up to %s for %s to start and catch up\n", o.WaitTimeout, o.Name)
	promoted, err := o.promoteUntil(ctx, c, id, deadline, o.progress)
	if err != nil {
		return nil, err
	}
	o.step(res, client.PlanStep{Action: client.StepPromote}, promoted, "promoted %s (%s)", o.Name, client.FormatID(id))
	if err := o.Printer.ReplaceChange(o.Out, printer.MemberPromote, promoted); err != nil {
		return nil, err
	}
	return promoted, o.waitServes(ctx, c, id, deadline)
}

// progress says where the new member stands while the promotion waits for it, in words that
// name no error: a failure to read the figures is part of the wait (the member not started, its
// client URL not answering yet), and only the promotion's end is a verdict.
func (o *memberReplaceOptions) progress(ctx context.Context, c *client.Client, id uint64) string {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	p, err := c.FetchLearnerProgress(ctx, id)
	switch {
	case errors.Is(err, client.ErrNoClientURL):
		return o.Name + " not started yet: waiting for its process"
	case is[*client.LearnerSilentError](err):
		return o.Name + " starting: its client URL does not answer yet"
	case err != nil:
		return fmt.Sprintf("%s: waiting (its progress cannot be read now: %v)", o.Name, err)
	case p.Behind() > 0:
		return fmt.Sprintf("%s catching up: %s of %s entries", o.Name, thousands(p.LearnerApplied), thousands(p.LeaderIndex))
	}
	return fmt.Sprintf("%s started and caught up (%s entries), promoting", o.Name, thousands(p.LeaderIndex))
}

// thousands writes n with a comma every three digits, as a person reads a count.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// waitServes returns once the new member serves (client.Serves: a started voter that answers a
// linearizable read through its own client URL), so that the command returns only then, and a
// live old member is removed only then; a *notServingError once deadline has passed. One line
// says what it waits for, another once it serves.
func (o *memberReplaceOptions) waitServes(ctx context.Context, c *client.Client, id uint64, deadline time.Time) error {
	said := false
	// Asked again as promotions are (promoteRetryAfter): the new member may be promoted, in
	// sync, a moment before its own publication of its name and client URLs commits.
	for attempt := 0; ; attempt++ {
		actx, cancel := o.withTimeout(ctx)
		err := c.Serves(actx, id)
		cancel()
		if err == nil {
			fmt.Fprintf(o.Err, "%s serves: a started voter, a linearizable read through its own client URL answered\n", o.Name)
			return nil
		}
		if !said {
			fmt.Fprintf(o.Err, "%s promoted, waiting for it to serve a linearizable read through its own client URL\n", o.Name)
			said = true
		}
		next := promoteRetryAfter(attempt)
		if !time.Now().Add(next).Before(deadline) {
			return &notServingError{name: o.Name, id: id, wait: o.WaitTimeout, err: err}
		}
		select {
		case <-ctx.Done():
			return &notServingError{name: o.Name, id: id, wait: o.WaitTimeout, err: ctx.Err()}
		case <-time.After(next):
		}
	}
}

// notServingError is member replace's new member, promoted, not serving when --wait-timeout ran
// out: the old member, if alive, is not removed yet, and the same command line run again waits
// again.
type notServingError struct {
	name string
	id   uint64
	wait time.Duration
	err  error
}

func (e *notServingError) Error() string {
	return fmt.Sprintf("%s (%s) does not serve after %s: %v; run the command again to wait again", e.name, client.FormatID(e.id), e.wait, e.err)
}

// gone reports whether a linearizable member list, from another member if the one asked stops,
// no longer holds member id.
func (o *memberReplaceOptions) gone(ctx context.Context, c *client.Client, id uint64) bool {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	list, err := c.MemberList(ctx, true)
	return err == nil && !slices.ContainsFunc(list.Members, func(m client.Member) bool { return m.ID == id })
}

// remove removes the old member, waiting out etcd's window after a start or an election, and
// returns the answer; one that is gone already counts as removed (nil).
func (o *memberReplaceOptions) remove(ctx context.Context, c *client.Client, oldID uint64, res *printer.ReplaceResult) (*client.ChangeResult, error) {
	removed, err := o.removeWaiting(ctx, c, oldID, o.OldRef)
	if errors.Is(err, rpcerr.ErrMemberNotFound) {
		o.goneAlready(res)
		return nil, nil
	}
	if errors.Is(err, rpcerr.ErrStopped) && o.gone(ctx, c, oldID) {
		// The member that took the removal was the old member itself, which stops once it has
		// applied its own removal (etcd answers "server stopped" then): it is done.
		o.step(res, client.PlanStep{Action: client.StepRemove, Done: true}, nil, "removed %s (%s)", o.OldRef, client.FormatID(oldID))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o.step(res, client.PlanStep{Action: client.StepRemove}, removed, "removed %s (%s)", o.OldRef, client.FormatID(oldID))
	return removed, o.Printer.ReplaceChange(o.Out, printer.MemberRemove, removed)
}
