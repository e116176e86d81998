package client

import (
	"context"
	"fmt"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
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

// DryRunUnsupportedError reports that the member connected to did not identify itself as
// clusterd. No change was sent: etcd would ignore the dry-run flag and make it.
type DryRunUnsupportedError struct {
	Endpoint string
}

func (e *DryRunUnsupportedError) Error() string {
	return fmt.Sprintf("--dry-run needs clusterd: the member at %s is not clusterd, and etcd would make the change; no change was sent", e.Endpoint)
}

// DryRunIgnoredError reports a dry run the server answered without its report: a server that
// does not know the dry-run flag has made the change.
type DryRunIgnoredError struct {
	Endpoint string
}

func (e *DryRunIgnoredError) Error() string {
	return fmt.Sprintf("the member at %s answered the dry run without a report, so it may have made the change; check member list", e.Endpoint)
}

// MemberAddDryRun asks the server whether MemberAdd with these arguments would be accepted.
func (c *Client) MemberAddDryRun(ctx context.Context, name string, peerURLs []string, learner bool) (*DryRun, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, wire.MemberName, name)
	r, err := c.dryRun(ctx, pb.Cluster_MemberAdd_FullMethodName, memberAddRequest(peerURLs, learner), &pb.MemberAddResponse{})
	if r != nil {
		r.ProvisionalID = true
		r.PeerURLs = peerURLs
		// The name travels as metadata, and the dry run's member is the one asked for.
		r.Member.Name = name
	}
	return r, err
}

// MemberRemoveDryRun asks the server whether MemberRemove of id would be accepted.
func (c *Client) MemberRemoveDryRun(ctx context.Context, id uint64) (*DryRun, error) {
	return ofExistingMember(c.dryRun(ctx, pb.Cluster_MemberRemove_FullMethodName, &pb.MemberRemoveRequest{ID: id}, &pb.MemberRemoveResponse{}))
}

// MemberUpdateDryRun asks the server whether MemberUpdate of id would be accepted.
func (c *Client) MemberUpdateDryRun(ctx context.Context, id uint64, peerURLs []string) (*DryRun, error) {
	r, err := ofExistingMember(c.dryRun(ctx, pb.Cluster_MemberUpdate_FullMethodName, &pb.MemberUpdateRequest{ID: id, PeerURLs: peerURLs}, &pb.MemberUpdateResponse{}))
	if r != nil {
		r.PeerURLs = peerURLs
	}
	return r, err
}

// MemberPromoteDryRun asks the server whether MemberPromote of id would be accepted.
func (c *Client) MemberPromoteDryRun(ctx context.Context, id uint64) (*DryRun, error) {
	return ofExistingMember(c.dryRun(ctx, pb.Cluster_MemberPromote_FullMethodName, &pb.MemberPromoteRequest{ID: id}, &pb.MemberPromoteResponse{}))
}

// ofExistingMember keeps only the ID of a member the cluster does not have, for a change that is
// about a member already there (all but an add): the server echoes the request for such a
// member (an update's new peer URLs), which would read as the member's current state.
func ofExistingMember(r *DryRun, err error) (*DryRun, error) {
	if r != nil && !r.Exists {
		r.Member = Member{ID: r.Member.ID}
	}
	return r, err
}

// dryRun sends a change marked as a dry run, to a member known to be clusterd. A verdict, the
// refusal included, is a *DryRun with a nil error; the error is for a dry run that could not be
// judged (no leader, no connection, not clusterd), which the real change would mostly meet too.
func (c *Client) dryRun(ctx context.Context, method string, req, answer proto.Message) (*DryRun, error) {
	if err := c.ensureClusterd(ctx); err != nil {
		return nil, err
	}
	ctx = metadata.AppendToOutgoingContext(ctx, wire.DryRun, "true")
	// The report is all a dry run reads: the members in the answer are those of the
	// configuration before the change, which the report holds too.
	hdr, err := c.invoke(ctx, false, method, req, answer)
	raw := hdr.Get(wire.DryRunReport)
	if len(raw) == 0 {
		if err != nil {
			// The server answered before it could judge, so it made no change either way.
			return nil, err
		}
		return nil, &DryRunIgnoredError{Endpoint: c.shown(c.at)}
	}
	rep, perr := wire.ReportFromValue(raw[0])
	if perr != nil {
		return nil, fmt.Errorf("cannot read the server's dry-run report: %v", perr)
	}
	r := dryRunOf(rep)
	// A refusal is the status the real change would get, sent beside the report.
	r.Err = err
	return r, nil
}

// ensureClusterd makes sure the member the next request goes to answered with clusterd's
// metadata, asking it with a serializable MemberList unless an earlier answer said so already.
func (c *Client) ensureClusterd(ctx context.Context) error {
	if c.conn == nil || c.clusterdAt != c.endpoints[c.at] {
		if _, _, err := c.list(ctx, false); err != nil {
			return err
		}
	}
	if c.clusterdAt != c.endpoints[c.at] {
		return &DryRunUnsupportedError{Endpoint: c.shown(c.at)}
	}
	return nil
}

// report returns nil for a report the server did not fill in: every configuration has at
// least one voter, so zero voters means the check stopped before counting.
func report(q membership.QuorumReport) *QuorumReport {
	if q.Voters == 0 {
		return nil
	}
	return &q
}

// dryRunOf is the DryRun of clusterd's report (the clusterd-dry-run-bin header).
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
