package client

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The calls of etcd's v3 API that the commands make travel as etcd's generated messages
// (etcdserverpb); this file turns their answers into the package's own types, which carry what
// clusterd's metadata adds (names before a member starts, the leader) and nothing of protobuf.

// headerOf is the part of etcd's response header the commands read.
func headerOf(h *pb.ResponseHeader) Header {
	return Header{ClusterID: h.GetClusterId(), MemberID: h.GetMemberId(), RaftTerm: h.GetRaftTerm()}
}

// membersOf converts the members of a Cluster answer. The started flag is not on the wire: etcd
// names a member when it starts, not before (fromClusterd corrects it, and sets the leader).
func membersOf(ms []*pb.Member) []Member {
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{
			ID: m.GetID(), Name: m.GetName(), Started: m.GetName() != "", PeerURLs: m.GetPeerURLs(),
			ClientURLs: m.GetClientURLs(), IsLearner: m.GetIsLearner(),
		}
	}
	return out
}

// statusOfAnswer converts a Maintenance.Status answer.
func statusOfAnswer(a *pb.StatusResponse) *Status {
	return &Status{
		Header: headerOf(a.GetHeader()), Version: a.GetVersion(), DBSize: a.GetDbSize(),
		DBSizeInUse: a.GetDbSizeInUse(), Leader: a.GetLeader(), RaftTerm: a.GetRaftTerm(),
		RaftIndex: a.GetRaftIndex(), RaftAppliedIndex: a.GetRaftAppliedIndex(),
		IsLearner: a.GetIsLearner(), Errors: a.GetErrors(),
	}
}
