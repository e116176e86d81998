package reconfig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
)

// A leader that loses its leadership between the checks and the hand-off answers "not leader"
// at once, and so does a transfer asked of a member that does not lead. Asked for a transfer
// then, raft on a follower passes it to the new leader, which would hand its leadership to
// whichever voter this member picked: here the other follower (the higher ID).
func TestHandOffAfterLosingLeadership(t *testing.T) {
	_, coords := startNodes(t, "")
	old := waitLeader(t, coords)
	var next, other uint64
	for id := range coords {
		switch {
		case id == old:
		case next == 0:
			next = id
		case id < next:
			next, other = id, next
		default:
			other = id
		}
	}
	c := coords[old]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.cfg.Node.TransferLeadership(ctx, membership.ID(next)); err != nil {
		t.Fatalf("handing leadership over: %v", err)
	}
	if err := c.handOff(ctx, c.cfg.Node.Cluster()); !errors.Is(err, raftnode.ErrNotLeader) {
		t.Fatalf("hand-off by a member that no longer leads: %v, want %v", err, raftnode.ErrNotLeader)
	}
	// The mechanism itself, as MoveLeader uses it: a member that does not lead asks raft nothing.
	if err := c.cfg.Node.TransferLeadership(ctx, membership.ID(other)); !errors.Is(err, raftnode.ErrNotLeader) {
		t.Fatalf("transfer by a member that no longer leads: %v, want %v", err, raftnode.ErrNotLeader)
	}
	if lead := coords[next].cfg.Node.Leader(); lead != membership.ID(next) {
		t.Fatalf("leadership moved from %v to %v after the hand-off of a member that no longer led", membership.ID(next), lead)
	}
}
