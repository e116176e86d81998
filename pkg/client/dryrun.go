package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// QuorumReport is the voting configuration before or after a change as the leader counts it:
// the server's own type, which the dry run's report carries.
type QuorumReport = membership.QuorumReport

// DryRun is the server's verdict on a change it checked without proposing it.
type DryRun struct {
	ClusterID uint64
	// Member is the member the change is about, as it is now; only its ID when there is no such
	// member. For an add it is the member as it would be added, under an ID the server drew for
	// the dry run only (ProvisionalID): the real add draws another.
	Member        Member
	ProvisionalID bool
	// Exists reports whether Member is in the configuration the change was judged against.
	Exists bool
	// PeerURLs are the peer URLs asked for by an add or an update; nil otherwise.
	PeerURLs []string
	// Before and After are nil when the server refused the change before counting voters (an
	// unknown member, the learner limit, a learner not in sync).
	Before, After *QuorumReport
	// Err is the answer the real change would get, nil when it would be accepted. It is the
	// error the server answered the dry run with, so errors.Is and the exit code treat it as
	// they would the real command's.
	Err error
}

// DryRunUnsupportedError reports that the member connected to does not know clusterd's dry run:
// it answered the call Unimplemented, so nothing was judged and nothing changed.
type DryRunUnsupportedError struct {
	Endpoint string
}

func (e *DryRunUnsupportedError) Error() string {
	return fmt.Sprintf("--dry-run needs clusterd: the member at %s is not clusterd, and etcd would make the change; no change was sent", e.Endpoint)
}

// MemberAddDryRun asks the server whether MemberAdd with these arguments would be accepted.
func (c *Client) MemberAddDryRun(ctx context.Context, name string, peerURLs []string, learner bool) (*DryRun, error) {
	return c.dryRun(ctx, membership.KindAdd, membership.Member{Name: name, PeerURLs: peerURLs, IsLearner: learner})
}

// MemberRemoveDryRun asks the server whether MemberRemove of id would be accepted.
func (c *Client) MemberRemoveDryRun(ctx context.Context, id uint64) (*DryRun, error) {
	return c.dryRun(ctx, membership.KindRemove, membership.Member{ID: membership.ID(id)})
}

// MemberUpdateDryRun asks the server whether MemberUpdate of id would be accepted.
func (c *Client) MemberUpdateDryRun(ctx context.Context, id uint64, peerURLs []string) (*DryRun, error) {
	return c.dryRun(ctx, membership.KindUpdate, membership.Member{ID: membership.ID(id), PeerURLs: peerURLs})
}

// MemberPromoteDryRun asks the server whether MemberPromote of id would be accepted.
func (c *Client) MemberPromoteDryRun(ctx context.Context, id uint64) (*DryRun, error) {
	return c.dryRun(ctx, membership.KindPromote, membership.Member{ID: membership.ID(id)})
}

// dryRun asks clusterd's DryRun service to judge the change of kind about m. A verdict, the
// refusal included, is a *DryRun with a nil error; the error is for a dry run that could not be
// judged (no leader, no connection), which the real change would mostly meet too, and a
// *DryRunUnsupportedError from a member that does not know the call (etcd).
func (c *Client) dryRun(ctx context.Context, kind membership.Kind, m membership.Member) (*DryRun, error) {
	var reply *cpb.ChangeReply
	// Sent as a change is: an answer that does not come in time is what the change would meet.
	err := c.call(ctx, false, cpb.DryRun_Check_FullMethodName, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		reply, err = cpb.NewDryRunClient(conn).Check(ctx, wire.ChangeToProto(membership.Change{Kind: kind, Member: m}))
		return err
	})
	if unimplemented(err) {
		return nil, c.dryRunUnsupported(ctx)
	}
	if err != nil {
		return nil, err
	}
	rep, refusal := wire.VerdictFromProto(reply)
	r := dryRunOf(rep)
	r.ProvisionalID, r.PeerURLs = kind == membership.KindAdd, m.PeerURLs
	if kind != membership.KindAdd && !r.Exists {
		// A change about a member already there, of one the cluster does not have: the server
		// echoes the request for it (an update's new peer URLs), which would read as the
		// member's current state. Only its ID is kept.
		r.Member = Member{ID: r.Member.ID}
	}
	if refusal != nil {
		// The error the change itself would have been answered with.
		r.Err = c.changeAnswer(serverAnswer(refusal), refusal)
	}
	return r, nil
}

// dryRunUnsupported is the error for a member that does not know the dry run, after a member
// list told a peer URL given as endpoint (clusterd's peer port knows no etcd service) apart.
func (c *Client) dryRunUnsupported(ctx context.Context) error {
	endpoint := c.shown(c.at)
	if _, _, err := c.list(ctx, false); err != nil {
		if peer, ok := errors.AsType[*PeerEndpointError](err); ok {
			return peer
		}
	}
	return &DryRunUnsupportedError{Endpoint: endpoint}
}

// report returns nil for a report the server did not fill in: every configuration has at
// least one voter, so zero voters means the check stopped before counting.
func report(q membership.QuorumReport) *QuorumReport {
	if q.Voters == 0 {
		return nil
	}
	return &q
}

// dryRunOf is the DryRun of clusterd's report.
func dryRunOf(rep *wire.Report) *DryRun {
	m := rep.Member
	r := &DryRun{
		Member: Member{
			ID: uint64(m.ID), Name: m.Name, Started: m.Started, IsLearner: m.IsLearner,
			PeerURLs: slices.Clone(m.PeerURLs), ClientURLs: slices.Clone(m.ClientURLs),
		},
		Before: report(rep.Before),
		After:  report(rep.After),
	}
	if rep.Cluster != nil {
		r.ClusterID = uint64(rep.Cluster.ID)
		r.Exists = rep.Cluster.Member(m.ID) != nil
	}
	return r
}
