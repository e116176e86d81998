package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/contexts"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

func newClusterCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:     "cluster",
		Short:   "Show a whole cluster at once, or several",
		Example: `  clusterctl cluster status -w table`,
	}, newClusterStatusCmd(g))
}

type clusterStatusOptions struct {
	*Globals
	AllContexts bool
	Contexts    []string
	flags       *pflag.FlagSet
}

func newClusterStatusCmd(g *Globals) *cobra.Command {
	o := &clusterStatusOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every member, the quorum and the fault tolerance of the cluster",
		Long: `Show one view of the cluster: each member (ID, name, started, voter or learner, whether it
answered, whether it leads, its raft index, how far it trails the leader's, its version, its
errors), then the voters, learners, started and live voters, the quorum, the fault tolerance
(how many more voters may fail with a quorum of live voters remaining; negative when the live
voters are already short of one), the leader and its term. The members are listed by the first
endpoint that answers, also without a leader, then each is asked for its status at its first
client URL, all at once, with the TLS settings and credentials given; the whole is bounded by
--command-timeout.

The given endpoints are asked too: answers that prove two groups of members apart, each deciding
on its own (after a force-new-cluster, old members restarted on their old data elect their own
leader under the same cluster ID), are a split: every group is named on the Error: line (and under
"split" in json), healthy is false, and the exit status is 34. Proof is different cluster IDs, two
leaders in one term, or each group holding an answering member the other's membership lacks.

Exit 0 when every voter answered and the cluster has a leader; 33 otherwise (degraded), with
everything printed; 34 for a split.

With --all-contexts (or --contexts a,b) every cluster of the contexts file is asked at once,
each with its context's settings alone (--dial-timeout and --command-timeout apply where a
context sets none): one row a context (context, endpoints, leader, voters, learners, fault
tolerance, healthy, error). Exit 33 when any cluster is degraded or does not answer.`,
		Example: `  clusterctl cluster status -w table
  clusterctl cluster status -w json | jq '.faultTolerance'
  clusterctl cluster status --all-contexts -w table`,
		Args: noArgs,
		RunE: runE(g, printer.ClusterStatus, o),
	}
	cmd.Flags().BoolVar(&o.AllContexts, "all-contexts", false, "show every context's cluster, one row each")
	cmd.Flags().StringSliceVar(&o.Contexts, "contexts", nil, "show these contexts' clusters, one row each")
	_ = cmd.RegisterFlagCompletionFunc("contexts", func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		// A comma-separated list: complete its last name.
		i := strings.LastIndex(toComplete, ",") + 1
		done, last := toComplete[:i], toComplete[i:]
		var out []cobra.Completion
		for _, n := range contextNames(last) {
			out = append(out, done+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	o.flags = cmd.Flags()
	return cmd
}

// clusterFlags are the global flags that pick a cluster: with several contexts each one's come
// from its context, so these are refused rather than silently ignored.
var clusterFlags = []string{"endpoints", "cacert", "cert", "key", "user", "password", "password-file", "insecure-skip-tls-verify", "insecure-transport", contextFlag}

func (o *clusterStatusOptions) validate([]string) error {
	if o.AllContexts && len(o.Contexts) > 0 {
		return errors.New("--all-contexts and --contexts: give one")
	}
	if o.AllContexts || len(o.Contexts) > 0 {
		for _, name := range clusterFlags {
			if o.flags.Changed(name) {
				return fmt.Errorf("--%s: with several contexts each cluster's settings are its context's", name)
			}
		}
	}
	return nil
}

func (o *clusterStatusOptions) run(ctx context.Context) error {
	if o.AllContexts || len(o.Contexts) > 0 {
		return o.runContexts(ctx)
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	st, err := c.ClusterStatus(ctx, o.CommandTimeout)
	if err != nil {
		return err
	}
	if err := c.CheckLogin(ctx, st.Leader != 0); err != nil {
		return err
	}
	if err := o.Printer.ClusterStatus(o.Out, st); err != nil {
		return err
	}
	if st.Split != nil {
		return st.Split
	}
	if why := degraded(st); why != "" {
		return &DegradedError{Clusters: 1, Degraded: []string{why}}
	}
	return nil
}

// degraded says why st is degraded, "" when it is not.
func degraded(st *client.ClusterStatus) string {
	var why []string
	if q := st.Quorum(); q.ConnectedVoters < q.Voters {
		why = append(why, fmt.Sprintf("%d of %d voters did not answer", q.Voters-q.ConnectedVoters, q.Voters))
	}
	if st.Leader == 0 {
		why = append(why, "no leader")
	}
	if st.Split != nil {
		why = append(why, st.Split.Error())
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("cluster %s: %s", client.FormatID(st.Header.ClusterID), strings.Join(why, ", "))
}

// DegradedError is cluster status finding a cluster, or some of several, degraded: a voter did
// not answer, there is no leader, or (several) the cluster did not answer at all. What it found
// was printed.
type DegradedError struct {
	Clusters int
	// Degraded says, for each degraded cluster, why.
	Degraded []string
}

func (e *DegradedError) Error() string {
	if e.Clusters == 1 {
		return "degraded: " + e.Degraded[0]
	}
	return fmt.Sprintf("%d of %d clusters degraded: %s", len(e.Degraded), e.Clusters, strings.Join(e.Degraded, "; "))
}

// runContexts asks every context's cluster at once.
func (o *clusterStatusOptions) runContexts(ctx context.Context) error {
	f, err := loadContexts()
	if err != nil {
		return &usageError{err}
	}
	cs, err := o.chosen(f)
	if err != nil {
		return err
	}
	rows := make([]printer.ContextStatus, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		rows[i] = printer.ContextStatus{Context: c.Name, Endpoints: c.Endpoints()}
		wg.Go(func() { rows[i].Status, rows[i].Err = o.contextStatus(ctx, c) })
	}
	wg.Wait()
	if err := o.Printer.ContextStatuses(o.Out, rows); err != nil {
		return err
	}
	var bad []string
	for _, r := range rows {
		switch {
		case r.Err != nil:
			bad = append(bad, r.Context+": did not answer")
		case degraded(r.Status) != "":
			bad = append(bad, r.Context+": "+degraded(r.Status))
		}
	}
	if len(bad) > 0 {
		return &DegradedError{Clusters: len(rows), Degraded: bad}
	}
	return nil
}

// chosen are the contexts asked: every one, or those --contexts names, in its order.
func (o *clusterStatusOptions) chosen(f *contexts.File) ([]contexts.Context, error) {
	if o.AllContexts {
		cs, err := f.Contexts()
		if err == nil && len(cs) == 0 {
			err = fmt.Errorf("no contexts in %s: clusterctl config set-context NAME", f.Path)
		}
		if err != nil {
			return nil, &usageError{err}
		}
		return cs, nil
	}
	cs := make([]contexts.Context, len(o.Contexts))
	for i, name := range o.Contexts {
		c, err := f.Get(name)
		if err != nil {
			return nil, &usageError{err}
		}
		cs[i] = c
	}
	return cs, nil
}

// contextStatus is the status of c's cluster, within c's command timeout.
func (o *clusterStatusOptions) contextStatus(ctx context.Context, c contexts.Context) (*client.ClusterStatus, error) {
	cl, timeout, err := o.contextClient(c)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cl.ClusterStatus(ctx, timeout)
}
