package raftnode

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// proposal is what a membership change entry carries: in the Data of a normal entry, in the
// Context of a conf change, as a clusterd.v2.Proposal (encode).
type proposal struct {
	RequestID uint64
	// Term is the leader term in which the change was checked; zero for changes that no leader
	// checked (a forced removal). A change appended in another term is not applied: the
	// membership it was checked against may have moved on since (see Propose).
	Term   uint64
	Change membership.Change
	// Time is when the leader proposed the change, by its clock: every member records this one
	// in the history.
	Time time.Time
}

// changeOf returns the membership change applying the entry attempts, if any: the rules the
// Ready loop applies by, for ForceNewCluster, which replays a log without it.
func changeOf(e *raftpb.Entry) (membership.Change, bool) {
	p, err := proposalOf(e)
	if err != nil || p == nil || p.stale(e) {
		return membership.Change{}, false
	}
	return p.Change, true
}

// proposalOf decodes the proposal an entry carries: nil for a normal entry with none (a
// leader's empty entry, or a conf change raft emptied).
func proposalOf(e *raftpb.Entry) (*proposal, error) {
	data := e.GetData()
	switch e.GetType() {
	case raftpb.EntryConfChange:
		cc := &raftpb.ConfChange{}
		if err := proto.Unmarshal(data, cc); err != nil {
			return nil, err
		}
		if data = cc.GetContext(); len(data) == 0 {
			// Every conf change this package makes carries its proposal, and raft would apply
			// one without it to its configuration but not to the membership.
			return nil, errors.New("conf change without a proposal")
		}
	case raftpb.EntryNormal:
	default:
		return nil, fmt.Errorf("unexpected entry type %v", e.GetType())
	}
	if len(data) == 0 {
		return nil, nil
	}
	return decodeProposal(data)
}

// stale reports whether the proposal was appended in another term than the one its change was
// checked in; such a change is never applied. Deterministic on every member and on replay:
// the entry's term is in the log.
func (p *proposal) stale(e *raftpb.Entry) bool {
	return p.Term != 0 && p.Term != e.GetTerm()
}

// removalEntry is the conf-change entry that removes id, as a proposal would have made it,
// but checked by no leader (Term zero), for ForceNewCluster: made at, by clusterd itself.
func removalEntry(id membership.ID, index, term uint64, at time.Time) (*raftpb.Entry, error) {
	ch := membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: id},
		By: membership.Origin{Clusterd: membership.OriginForceNewCluster}}
	ctx, err := proposal{Change: ch, Time: at}.encode()
	if err != nil {
		return nil, err
	}
	data, err := proto.Marshal(&raftpb.ConfChange{
		Type: confChangeType(ch).Enum(), NodeId: proto.Uint64(uint64(id)), Context: ctx,
	})
	if err != nil {
		return nil, err
	}
	return &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(index), Term: proto.Uint64(term), Data: data}, nil
}

// encode is the proposal as an entry carries it.
func (p proposal) encode() ([]byte, error) {
	return proto.Marshal(&pb.Proposal{RequestId: p.RequestID, Term: p.Term, Change: wire.ChangeToProto(p.Change), Time: wire.TimeToProto(p.Time)})
}

// decodeProposal reads what encode wrote.
func decodeProposal(data []byte) (*proposal, error) {
	m := &pb.Proposal{}
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, err
	}
	// A missing change reads as the zero change, which no rule accepts.
	return &proposal{RequestID: m.GetRequestId(), Term: m.GetTerm(), Change: wire.ChangeFromProto(m.GetChange()), Time: wire.TimeFromProto(m.GetTime())}, nil
}

func confChangeType(ch membership.Change) raftpb.ConfChangeType {
	switch ch.Kind {
	case membership.KindAdd:
		if ch.Member.IsLearner {
			return raftpb.ConfChangeType_ConfChangeAddLearnerNode
		}
		return raftpb.ConfChangeType_ConfChangeAddNode
	case membership.KindRemove:
		return raftpb.ConfChangeType_ConfChangeRemoveNode
	case membership.KindPromote:
		return raftpb.ConfChangeType_ConfChangeAddNode
	}
	return raftpb.ConfChangeType_ConfChangeUpdateNode
}
