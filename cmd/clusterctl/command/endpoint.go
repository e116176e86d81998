package command

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

func newEndpointCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:   "endpoint",
		Short: "Ask each endpoint for its status or health",
		Long: `Ask each endpoint on its own, all at once, each within --command-timeout: the endpoints given
with --endpoints, or with --cluster every client URL of the members.`,
		Example: `  clusterctl endpoint status --cluster -w table
  clusterctl endpoint health --cluster`,
	}, newEndpointStatusCmd(g), newEndpointHealthCmd(g))
}

// endpointOptions are what endpoint status and health share: --cluster.
type endpointOptions struct {
	*Globals
	Cluster bool
}

func (o *endpointOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.Cluster, "cluster", false, "ask every client URL of the members rather than --endpoints")
}

// targets are the endpoints to ask and, with --cluster, the name of the member each belongs to.
func (o *endpointOptions) targets(ctx context.Context, c *client.Client) ([]string, map[string]string, error) {
	if !o.Cluster {
		return c.GivenEndpoints(), nil, nil
	}
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	members, err := c.LocalMemberList(ctx)
	if err != nil {
		return nil, nil, err
	}
	var eps []string
	names := map[string]string{}
	for _, m := range members {
		// A member that has not started has no client URL to ask.
		for _, u := range m.ClientURLs {
			if _, seen := names[u]; !seen {
				eps = append(eps, u)
				names[u] = m.Name
			}
		}
	}
	return eps, names, nil
}

// endpointsError reports endpoints that did not answer or were unhealthy; their rows were
// printed.
type endpointsError struct {
	failed, total int
	unhealthy     bool
}

func (e *endpointsError) Error() string {
	verb := "did not answer"
	if e.unhealthy {
		verb = "unhealthy"
	}
	return fmt.Sprintf("%d of %d endpoints %s", e.failed, e.total, verb)
}

type endpointStatusOptions struct{ endpointOptions }

func newEndpointStatusCmd(g *Globals) *cobra.Command {
	o := &endpointStatusOptions{endpointOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each endpoint's member, version, database size, leadership and raft indexes",
		Long: `Show, for each endpoint, etcdctl's endpoint status columns (endpoint, member ID, version, DB
size, is leader, is learner, raft term, raft index, raft applied index, errors), the member's
name, and how many entries its raft index trails the leader's in the same round of calls. An
endpoint that does not answer is a row with its error; the exit status is then 29. Answers that
prove two groups of members apart, each deciding on its own (different cluster IDs, two leaders
in one term, or each group holding an answering member the other's membership lacks), are a
split: every group is named on the Error: line, and the exit status is 34.`,
		Example: `  clusterctl endpoint status --cluster -w table
  clusterctl --endpoints=10.0.0.1:2379,10.0.0.2:2379 endpoint status -w json | jq '.[] | {name, behindLeader}'`,
		Args: noArgs,
		RunE: runE(g, printer.EndpointStatus, o),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *endpointStatusOptions) run(ctx context.Context) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	eps, names, err := o.targets(ctx, c)
	if err != nil {
		return err
	}
	// The statuses go on a copy of c made before the list below starts to change c (its
	// connection, its token): c is not for concurrent use.
	each, err := c.Sibling(c.GivenEndpoints()...)
	if err != nil {
		return err
	}
	var byID map[uint64]string
	var list sync.WaitGroup
	if names == nil {
		// The names come from a list asked at the same time as the statuses; without it the
		// rows are printed without names.
		list.Go(func() {
			lctx, cancel := o.withTimeout(ctx)
			defer cancel()
			if ms, err := c.LocalMemberList(lctx); err == nil {
				byID = make(map[uint64]string, len(ms))
				for _, m := range ms {
					byID[m.ID] = m.Name
				}
			}
		})
	}
	sts := each.StatusOfEach(ctx, eps, o.CommandTimeout)
	list.Wait()
	lctx, cancel := o.withTimeout(ctx)
	defer cancel()
	if err := c.CheckLogin(lctx, slices.ContainsFunc(sts, func(s client.EndpointStatus) bool { return s.Status != nil && s.Status.Leader != 0 })); err != nil {
		return err
	}
	rows := statusRows(sts, names, byID)
	if err := o.Printer.EndpointStatus(o.Out, rows); err != nil {
		return err
	}
	// Before the endpoints that did not answer: answers of two groups apart say more.
	if split := c.Split(ctx, sts, o.CommandTimeout); split != nil {
		return split
	}
	failed := 0
	for _, r := range rows {
		if r.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		return &endpointsError{failed: failed, total: len(rows)}
	}
	return nil
}

// statusRows adds the names, by endpoint or by member ID, and each member's distance to the
// leader: the member that says it leads, in the highest term among the answers.
func statusRows(sts []client.EndpointStatus, byEndpoint map[string]string, byID map[uint64]string) []printer.StatusRow {
	answers := make([]*client.Status, len(sts))
	for i, s := range sts {
		answers[i] = s.Status
	}
	leader := client.LeaderOf(answers)
	rows := make([]printer.StatusRow, len(sts))
	for i, s := range sts {
		r := printer.StatusRow{EndpointStatus: s, Name: byEndpoint[s.Endpoint]}
		if st := s.Status; st != nil {
			if r.Name == "" {
				r.Name = byID[st.Header.MemberID]
			}
			if leader != nil {
				r.BehindKnown, r.Behind = true, max(leader.RaftIndex, st.RaftIndex)-st.RaftIndex
			}
		}
		rows[i] = r
	}
	return rows
}
