package raftnode

import (
	"errors"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// ForceNewCluster turns a member's stored data into a one-member cluster, as etcd does, before
// the node is built from it: the log is cut at the commit index (what was not committed may never
// have been), and conf-change entries that remove every other member, voters and learners alike,
// are appended and committed, in one transaction. They are applied like any other entry when the
// node runs, so the membership, the removed IDs and raft's configuration all come from the log,
// and a restart without the flag changes nothing. The history is kept, and each removal is recorded
// in it as clusterd's own (force-new-cluster). The cluster keeps its ID: old members that come
// back are refused by it as removed members.
//
// It lives here, not with the start-up decision, because it must replay the log by the same rules
// as the Ready loop (a stale proposal is not applied) and write entries in the loop's format.
// state is as loaded from st; load it again afterwards.
func ForceNewCluster(st *storage.Store, state *storage.State) error {
	c, err := ForcedFrom(state)
	if err != nil {
		return err
	}
	hs := state.HardState
	commit := hs.GetCommit()
	last := commit
	var added []*raftpb.Entry
	at := proposalTime()
	for _, m := range c.List() {
		if m.ID == state.MemberID {
			continue
		}
		last++
		e, err := removalEntry(m.ID, last, hs.GetTerm(), at)
		if err != nil {
			return err
		}
		added = append(added, e)
	}
	newHS := proto.CloneOf(hs)
	newHS.Commit = proto.Uint64(last)
	return st.Save(storage.Update{HardState: newHS, TruncateFrom: commit + 1, Entries: added})
}

// ForcedFrom returns the membership a forced new cluster starts from, the stored one once the
// committed log is applied, or why this member's data cannot start one (it is not in that
// membership, or it is a learner). It writes nothing: the start-up asks the members it names
// whether they are alive before anything is rewritten.
func ForcedFrom(state *storage.State) (*membership.Cluster, error) {
	commit := state.HardState.GetCommit()
	c := state.Cluster
	for _, e := range state.Entries {
		if e.GetIndex() > commit {
			break
		}
		if e.GetIndex() <= state.Applied {
			continue
		}
		if ch, ok := changeOf(e); ok {
			c, _ = c.Apply(ch)
		}
	}
	self := c.Member(state.MemberID)
	if self == nil {
		return nil, errors.New("this member is not in its own cluster's membership")
	}
	if self.IsLearner {
		return nil, errors.New("this member is a learner: a new cluster must start from a voter's data")
	}
	return c, nil
}
