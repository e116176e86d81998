package raftnode

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// ForceNewCluster replays the committed log by the Ready loop's rules: a removal checked in one
// term and appended in another is never applied, so it must not count when deciding whom to
// remove.
func TestChangeOfSkipsStaleProposal(t *testing.T) {
	victim := membership.ID(7)
	ctx, err := proposal{RequestID: 7, Term: 2, Change: membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: victim}}}.encode()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeType_ConfChangeRemoveNode.Enum(),
		NodeId: proto.Uint64(uint64(victim)), Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	entry := func(term uint64) *raftpb.Entry {
		return &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Index: proto.Uint64(2), Term: proto.Uint64(term), Data: cc}
	}
	if _, ok := changeOf(entry(3)); ok {
		t.Fatal("changeOf took a proposal appended in a later term than it was checked in for a change")
	}
	ch, ok := changeOf(entry(2))
	if !ok || ch.Kind != membership.KindRemove || ch.Member.ID != victim {
		t.Fatalf("changeOf(entry of its own term) = %+v, %v; want the removal of %s", ch, ok, victim)
	}
	// What ForceNewCluster appends is checked by no leader, so it applies in any term.
	forced, err := removalEntry(victim, 5, 9, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ch, ok := changeOf(forced); !ok || ch.Kind != membership.KindRemove || ch.Member.ID != victim {
		t.Fatalf("changeOf(removalEntry) = %+v, %v; want the removal of %s", ch, ok, victim)
	}
}
