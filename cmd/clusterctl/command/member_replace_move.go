package command

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// moveLeader hands leadership from the old member to the new one, once it is promoted, when the
// old one leads. Who leads is read from the promotion's answer when the leader itself answered
// it and says so (clusterd's leader does), as it stood once the new member had caught up;
// otherwise, since a follower's word on the leader may be stale, from a linearizable member list.
func (o *memberReplaceOptions) moveLeader(ctx context.Context, c *client.Client, promoted *client.ChangeResult, oldID uint64, res *printer.ReplaceResult) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	var members []client.Member
	if promoted != nil && slices.ContainsFunc(promoted.Members, func(m client.Member) bool { return m.IsLeader && m.ID == promoted.Header.MemberID }) {
		members = promoted.Members
	} else {
		// Asked again: leadership may have moved while the new member caught up.
		list, err := c.MemberList(ctx, true)
		if err != nil {
			return err
		}
		members = list.Members
	}
	if !slices.ContainsFunc(members, func(m client.Member) bool { return m.ID == oldID && m.IsLeader }) {
		o.step(res, client.PlanStep{Action: client.StepMove, Skip: true}, nil, "%s does not lead: leadership not moved", o.OldRef)
		return nil
	}
	url, err := clientURLOf(members, oldID)
	if err != nil {
		return err
	}
	newID := res.Added.ID
	if err := moveToPromoted(ctx, c, url, newID); err != nil {
		return err
	}
	o.step(res, client.PlanStep{Action: client.StepMove}, nil, "moved leadership from %s to %s (%s)", o.OldRef, o.Name, client.FormatID(newID))
	return nil
}

// transfereeGrace bounds how long a leader's "bad leader transferee" is taken for a member it has
// not heard from yet: the new member was promoted a moment ago, and the leader counts a member as
// a transferee only once it heard from it within an election timeout (etcd's default: 1 s).
const transfereeGrace = 3 * time.Second

// moveToPromoted hands leadership at the leader's url to the member just promoted, asking again
// while the leader answers that it has not heard from it yet, for at most transfereeGrace.
func moveToPromoted(ctx context.Context, c *client.Client, url string, id uint64) error {
	deadline := time.Now().Add(transfereeGrace)
	for {
		_, err := c.MoveLeader(ctx, url, id)
		if !errors.Is(err, rpcerr.ErrBadLeaderTransferee) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
