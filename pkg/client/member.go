package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// Header identifies the answer: which cluster, which member answered, in which raft term.
type Header struct {
	ClusterID uint64
	MemberID  uint64
	RaftTerm  uint64
}

// Member is one member of the cluster as the answering member sees it.
type Member struct {
	ID   uint64
	Name string
	// Started is false for a member that was added but has not yet joined.
	Started    bool
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
	// IsLeader is known in every MemberList result, and in change results only from clusterd,
	// which reports the leader with every answer.
	IsLeader bool
}

// ListResult is the answer to MemberList.
type ListResult struct {
	Header  Header
	Members []Member
}

// ChangeResult is the answer to a membership change: the member changed and every member of
// the configuration after the change.
type ChangeResult struct {
	Header  Header
	ID      uint64
	Members []Member
}

// AddResult is the answer to MemberAdd; Member is the new member, with the name it was added
// under even where the server does not store names.
type AddResult struct {
	ChangeResult
	Member Member
}

// FormatID writes a member or cluster ID the way people and scripts read it: 16 lowercase hex
// digits.
func FormatID(id uint64) string { return fmt.Sprintf("%016x", id) }

// FormatIDs is FormatID of each of ids.
func FormatIDs(ids []uint64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = FormatID(id)
	}
	return out
}

// ParseID reads an ID in hex, with or without leading zeros.
func ParseID(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }

// MemberList lists the members. A linearizable list goes through the leader and sees every
// committed change; a serializable one is answered by the member itself, also without a leader.
func (c *Client) MemberList(ctx context.Context, linearizable bool) (*ListResult, error) {
	r, leaderKnown, err := c.list(ctx, linearizable)
	if err != nil || leaderKnown {
		return r, err
	}
	// Real etcd does not say who leads in a Cluster answer; its status does. Asked of the same
	// member, so the leader is the one that member follows.
	st, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	markLeader(r.Members, st.Leader)
	return r, nil
}

// list is MemberList without finding the leader where the answer does not name it.
func (c *Client) list(ctx context.Context, linearizable bool) (r *ListResult, leaderKnown bool, err error) {
	var a pb.MemberListResponse
	hdr, err := c.invoke(ctx, true, pb.Cluster_MemberList_FullMethodName, &pb.MemberListRequest{Linearizable: linearizable}, &a)
	if err != nil {
		return nil, false, err
	}
	_, leaderKnown = hdr[wire.Leader]
	return &ListResult{Header: headerOf(a.GetHeader()), Members: fromClusterd(membersOf(a.GetMembers()), hdr)}, leaderKnown, nil
}

// ListForResolve is the read a name is resolved against before a change: linearizable, so it
// is the membership the change will be decided on, and without MemberList's extra request for
// the leader when the answer does not say who leads (real etcd's), since resolving needs none.
// A linearizable read waits for a leader until the deadline, so the member's status (no token,
// no leader needed) is asked first: a member that names no leader for an election's length ends
// the change with rpcerr.ErrNoLeader, as a read without a leader ends, which no change could outlive.
// Any other outcome of the status is left to the list to meet and report.
func (c *Client) ListForResolve(ctx context.Context) (*ListResult, error) {
	if err := waitLeader(ctx, c.Status); errors.Is(err, rpcerr.ErrNoLeader) {
		return nil, err
	}
	r, _, err := c.list(ctx, true)
	return r, err
}

// MemberAdd adds a member under name with the given peer URLs, as a learner if asked.
func (c *Client) MemberAdd(ctx context.Context, name string, peerURLs []string, learner bool) (*AddResult, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, wire.MemberName, name)
	var a pb.MemberAddResponse
	hdr, err := c.invoke(ctx, false, pb.Cluster_MemberAdd_FullMethodName, &pb.MemberAddRequest{PeerURLs: peerURLs, IsLearner: learner}, &a)
	if err != nil {
		return nil, err
	}
	return named(changeResult(a.GetHeader(), a.GetMembers(), a.GetMember().GetID(), hdr), name), nil
}

// named is the AddResult of the add that cr answers, its new member under name: etcd does not
// store the name before the member starts; it is the one asked for.
func named(cr ChangeResult, name string) *AddResult {
	r := &AddResult{ChangeResult: cr}
	for i := range r.Members {
		if r.Members[i].ID == r.ID {
			r.Members[i].Name = name
			r.Member = r.Members[i]
		}
	}
	return r
}

// MemberRemove removes the member with the given ID.
func (c *Client) MemberRemove(ctx context.Context, id uint64) (*ChangeResult, error) {
	return c.change(ctx, pb.Cluster_MemberRemove_FullMethodName, id, &pb.MemberRemoveRequest{ID: id}, &pb.MemberRemoveResponse{})
}

// MemberUpdate replaces the peer URLs of the member with the given ID.
func (c *Client) MemberUpdate(ctx context.Context, id uint64, peerURLs []string) (*ChangeResult, error) {
	return c.change(ctx, pb.Cluster_MemberUpdate_FullMethodName, id, &pb.MemberUpdateRequest{ID: id, PeerURLs: peerURLs}, &pb.MemberUpdateResponse{})
}

// MemberPromote makes the learner with the given ID a voter. A learner not in sync yet is
// refused (rpcerr.ErrLearnerNotReady) at once: a caller that waits for a learner asks again.
func (c *Client) MemberPromote(ctx context.Context, id uint64) (*ChangeResult, error) {
	return c.change(ctx, pb.Cluster_MemberPromote_FullMethodName, id, &pb.MemberPromoteRequest{ID: id}, &pb.MemberPromoteResponse{})
}

// clusterAnswer is every Cluster answer but an add's: a header and the members after the change.
type clusterAnswer interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
	GetMembers() []*pb.Member
}

// change sends a change of member id and reads answer, whose members are the configuration after it.
func (c *Client) change(ctx context.Context, method string, id uint64, req proto.Message, answer clusterAnswer) (*ChangeResult, error) {
	hdr, err := c.invoke(ctx, false, method, req, answer)
	if err != nil {
		return nil, err
	}
	r := changeResult(answer.GetHeader(), answer.GetMembers(), id, hdr)
	return &r, nil
}

func changeResult(h *pb.ResponseHeader, ms []*pb.Member, id uint64, hdr metadata.MD) ChangeResult {
	return ChangeResult{Header: headerOf(h), ID: id, Members: fromClusterd(membersOf(ms), hdr)}
}

// invoke sends one RPC with etcd's generated messages and returns the response header metadata.
func (c *Client) invoke(ctx context.Context, read bool, method string, req, answer proto.Message) (hdr metadata.MD, err error) {
	err = c.call(ctx, read, method, func(ctx context.Context, conn *grpc.ClientConn) error {
		return conn.Invoke(ctx, method, req, answer, grpc.Header(&hdr))
	})
	return hdr, err
}

// fromClusterd completes the members of an answer: names, the started flag and the leader from
// clusterd's metadata when it is there, and etcd's rule otherwise.
func fromClusterd(ms []Member, hdr metadata.MD) []Member {
	// clusterd-members-bin that is missing or cannot be read leaves etcd's rule in force rather
	// than failing: the answer itself is valid, and after a change it reports something that has
	// already happened.
	if v := hdr.Get(wire.Members); len(v) > 0 {
		known, _ := wire.MembersFromValue(v[0])
		for _, k := range known {
			if i := slices.IndexFunc(ms, func(m Member) bool { return m.ID == uint64(k.ID) }); i >= 0 {
				ms[i].Name, ms[i].Started = k.Name, k.Started
			}
		}
	}
	if v := hdr.Get(wire.Leader); len(v) > 0 && v[0] != "" {
		if id, err := ParseID(v[0]); err == nil {
			markLeader(ms, id)
		}
	}
	return ms
}

func markLeader(ms []Member, leader uint64) {
	for i := range ms {
		ms[i].IsLeader = ms[i].ID == leader
	}
}
