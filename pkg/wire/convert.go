package wire

import (
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// The one place membership's values become clusterd's wire messages and back. Reading is total:
// a field that is missing reads as its zero value, as encoding/json read it before; whatever is
// read is checked by whoever uses it, as anything from the network is.

// MemberToProto is m on the wire.
func MemberToProto(m *membership.Member) *pb.Member {
	return &pb.Member{
		Id: uint64(m.ID), Name: m.Name, PeerUrls: m.PeerURLs, ClientUrls: m.ClientURLs,
		IsLearner: m.IsLearner, Started: m.Started,
	}
}

// MemberFromProto reads what MemberToProto wrote.
func MemberFromProto(p *pb.Member) membership.Member {
	return membership.Member{
		ID: membership.ID(p.GetId()), Name: p.GetName(), PeerURLs: p.GetPeerUrls(), ClientURLs: p.GetClientUrls(),
		IsLearner: p.GetIsLearner(), Started: p.GetStarted(),
	}
}

// ClusterToProto is c on the wire: its members sorted by ID and its removed IDs sorted, not its
// history, which no answer but History.List's needs; nil for nil.
func ClusterToProto(c *membership.Cluster) *pb.Cluster {
	if c == nil {
		return nil
	}
	p := &pb.Cluster{Id: uint64(c.ID)}
	for _, m := range c.List() {
		p.Members = append(p.Members, MemberToProto(m))
	}
	for _, id := range slices.Sorted(c.Removed.All()) {
		p.Removed = append(p.Removed, uint64(id))
	}
	return p
}

// ClusterFromProto reads what ClusterToProto wrote; nil for nil.
func ClusterFromProto(p *pb.Cluster) *membership.Cluster {
	if p == nil {
		return nil
	}
	members := make([]*membership.Member, 0, len(p.GetMembers()))
	for _, m := range p.GetMembers() {
		mm := MemberFromProto(m)
		members = append(members, &mm)
	}
	c := membership.NewCluster(membership.ID(p.GetId()), members)
	if len(p.GetRemoved()) > 0 {
		ids := make([]membership.ID, len(p.GetRemoved()))
		for i, id := range p.GetRemoved() {
			ids[i] = membership.ID(id)
		}
		c.Removed = membership.NewIDSet(ids...)
	}
	return c
}

// EventToProto is ev on the wire.
func EventToProto(ev membership.Event) *pb.Event {
	return &pb.Event{
		RaftIndex: ev.RaftIndex, Term: ev.Term, Change: ev.Change, MemberId: uint64(ev.MemberID),
		Name: ev.Name, PeerUrls: ev.PeerURLs, IsLearner: ev.IsLearner, By: OriginToProto(ev.By),
		Time: TimeToProto(ev.Time),
	}
}

// EventsFromProto reads what EventToProto wrote, in order.
func EventsFromProto(ps []*pb.Event) []membership.Event {
	out := make([]membership.Event, len(ps))
	for i, p := range ps {
		out[i] = membership.Event{
			RaftIndex: p.GetRaftIndex(), Term: p.GetTerm(), Time: TimeFromProto(p.GetTime()),
			Change: p.GetChange(), MemberID: membership.ID(p.GetMemberId()), Name: p.GetName(),
			PeerURLs: p.GetPeerUrls(), IsLearner: p.GetIsLearner(), By: OriginFromProto(p.GetBy()),
		}
	}
	return out
}

// TimeToProto is t on the wire: nil for the zero time, which TimeFromProto reads back.
func TimeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// TimeFromProto is the zero time for an absent timestamp, as JSON's omitzero read it.
func TimeFromProto(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

// OriginToProto is o on the wire; nil for an unknown origin.
func OriginToProto(o membership.Origin) *pb.Origin {
	if o.IsZero() {
		return nil
	}
	return &pb.Origin{Cn: o.CN, Address: o.Address, Via: o.Via, Clusterd: o.Clusterd}
}

// OriginFromProto reads what OriginToProto wrote.
func OriginFromProto(p *pb.Origin) membership.Origin {
	return membership.Origin{CN: p.GetCn(), Address: p.GetAddress(), Via: p.GetVia(), Clusterd: p.GetClusterd()}
}

// ChangeToProto is ch on the wire; its kind keeps membership's number.
func ChangeToProto(ch membership.Change) *pb.Change {
	return &pb.Change{Kind: pb.ChangeKind(ch.Kind), Member: MemberToProto(&ch.Member), By: OriginToProto(ch.By)}
}

// ChangeFromProto reads what ChangeToProto wrote.
func ChangeFromProto(p *pb.Change) membership.Change {
	return membership.Change{Kind: membership.Kind(p.GetKind()), Member: MemberFromProto(p.GetMember()), By: OriginFromProto(p.GetBy())}
}

// QuorumToProto is q on the wire.
func QuorumToProto(q membership.QuorumReport) *pb.QuorumReport {
	return &pb.QuorumReport{
		Voters: int64(q.Voters), Learners: int64(q.Learners), StartedVoters: int64(q.StartedVoters),
		ConnectedVoters: int64(q.ConnectedVoters), Quorum: int64(q.Quorum), FaultTolerance: int64(q.FaultTolerance),
	}
}

// QuorumFromProto reads what QuorumToProto wrote.
func QuorumFromProto(p *pb.QuorumReport) membership.QuorumReport {
	return membership.QuorumReport{
		Voters: int(p.GetVoters()), Learners: int(p.GetLearners()), StartedVoters: int(p.GetStartedVoters()),
		ConnectedVoters: int(p.GetConnectedVoters()), Quorum: int(p.GetQuorum()), FaultTolerance: int(p.GetFaultTolerance()),
	}
}

// Report is the outcome of a membership change as the member that decided it answers it: to a
// member that forwarded the change (Members/Change), and as a dry run's report (DryRun/Check).
type Report struct {
	Cluster *membership.Cluster
	Member  membership.Member // the member the change is about, ID assigned
	Before  membership.QuorumReport
	After   membership.QuorumReport
}

// WithoutRemoved is r as it leaves the member that decided it: its membership without the
// removed IDs, as many as the cluster's whole life; the answers are about the members.
func (r *Report) WithoutRemoved() *Report {
	out := *r
	if out.Cluster != nil {
		out.Cluster = out.Cluster.WithoutRemoved()
	}
	return &out
}

// Proto is r on the wire.
func (r *Report) Proto() *pb.ChangeReply {
	return &pb.ChangeReply{
		Cluster: ClusterToProto(r.Cluster), Member: MemberToProto(&r.Member),
		Before: QuorumToProto(r.Before), After: QuorumToProto(r.After),
	}
}

// ReportFromProto reads what Report.Proto wrote.
func ReportFromProto(p *pb.ChangeReply) *Report {
	return &Report{
		Cluster: ClusterFromProto(p.GetCluster()), Member: MemberFromProto(p.GetMember()),
		Before: QuorumFromProto(p.GetBefore()), After: QuorumFromProto(p.GetAfter()),
	}
}

// DryRunCheck is the dry run's full method name, which authorization sees (docs/wire.md).
const DryRunCheck = pb.DryRun_Check_FullMethodName

// VerdictProto is a dry run's verdict on the wire, as it leaves the member that reached it: the
// report r it was reached on and the refusal, the status the change itself would be answered
// with (nil when it would be accepted).
func VerdictProto(r *Report, refusal error) *pb.ChangeReply {
	p := r.WithoutRemoved().Proto()
	if refusal != nil {
		st := status.Convert(refusal)
		p.Refusal = &pb.Refusal{Code: uint32(st.Code()), Message: st.Message()}
	}
	return p
}

// VerdictFromProto reads what VerdictProto wrote: the report, and the refusal as a status error.
func VerdictFromProto(p *pb.ChangeReply) (*Report, error) {
	var refusal error
	if rp := p.GetRefusal(); rp != nil {
		refusal = status.Error(codes.Code(rp.GetCode()), rp.GetMessage())
	}
	return ReportFromProto(p), refusal
}
