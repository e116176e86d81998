package raftnode

import "github.com/clusterctl/clusterctl/pkg/membership"

// RecentlyActive reports whether this member, as leader, heard from member id within the last
// election timeout (raft's RecentActive, which CheckQuorum resets every election timeout). A
// follower tracks no one and answers false.
func (n *Node) RecentlyActive(id membership.ID) bool {
	pr, ok := n.raft.Status().Progress[uint64(id)]
	return ok && pr.RecentActive
}
