package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

// earlyMove hands leadership from the old member, when it leads, to an established voter while
// the new member starts and catches up: the move then costs the replacement no time of its own,
// and leadership does not go to a member that has only just started. It is advice only: when it
// does not happen (the old member does not lead, no other voter answers, the transfer fails),
// leadership is moved after the promotion, to the new member, as before.
type earlyMove struct {
	done chan struct{}
	// to is the member that leads after the move, 0 when leadership was not moved, and toName
	// its name; via is a client connected to it, for the removal, or nil.
	to     uint64
	toName string
	via    *client.Client
	// reported: step 3 said so; otherwise the command's end does.
	reported bool
}

// startEarlyMove starts the early move of the replacement r, whose new member the add answered
// with added. The voter it moves leadership to must answer with its status, following the old
// member, at the time: a count of the voters the leader heard from lags a failure by up to an
// election timeout, and a transfer to a member that is down holds up every change for as long.
// Whether the old member leads, clusterd's answer to the add says; real etcd's status does.
func (o *memberReplaceOptions) startEarlyMove(ctx context.Context, c *client.Client, r *client.Replacement, added *client.AddResult) *earlyMove {
	e := &earlyMove{done: make(chan struct{})}
	var voters []client.Member
	if r.Old != nil && len(r.Old.ClientURLs) > 0 {
		for _, m := range added.Members {
			if m.ID != r.OldID && m.ID != added.ID && !m.IsLearner && m.Started && len(m.ClientURLs) > 0 {
				voters = append(voters, m)
			}
		}
	}
	lead := slices.IndexFunc(added.Members, func(m client.Member) bool { return m.IsLeader })
	if len(voters) == 0 || lead >= 0 && added.Members[lead].ID != r.OldID {
		close(e.done)
		return e
	}
	oldURL := r.Old.ClientURLs[0]
	old, release, err := c.At(oldURL)
	if err != nil {
		close(e.done)
		return e
	}
	go func() {
		defer close(e.done)
		defer release()
		ctx, cancel := o.withTimeout(ctx)
		defer cancel()
		to := o.followerOf(ctx, old, r.OldID, lead < 0, voters)
		if to == nil {
			return
		}
		if _, err := old.MoveLeader(ctx, oldURL, to.ID); err != nil {
			return
		}
		e.to, e.toName = to.ID, to.Name
		e.via = o.connected(ctx, c, to.ClientURLs[0])
	}()
	return e
}

// statusWithin bounds each status call of the early move: a member that does not answer that
// soon is no leader to hand over to, and step 3 waits for the early move, so a member that is
// down (a dial to a host that is gone can take the whole --dial-timeout) must not hold it up.
const statusWithin = 500 * time.Millisecond

// followerOf returns the first of voters that answers with its status and follows the old
// member; nil when none does, or when askOld and the old member, through old, does not say it
// leads. One at a time: the first usually answers, and every call made while the new member
// starts takes from it.
func (o *memberReplaceOptions) followerOf(ctx context.Context, old *client.Client, oldID uint64, askOld bool, voters []client.Member) *client.Member {
	if askOld {
		sctx, cancel := context.WithTimeout(ctx, statusWithin)
		st, err := old.Status(sctx)
		cancel()
		if err != nil || st.Leader != oldID {
			return nil
		}
	}
	for i, v := range voters {
		st := old.StatusOfEach(ctx, v.ClientURLs[:1], statusWithin)[0].Status
		if st != nil && st.Leader == oldID && !st.IsLearner {
			return &voters[i]
		}
	}
	return nil
}

// noEarlyMove is an early move that did not happen.
func noEarlyMove() *earlyMove {
	e := &earlyMove{done: make(chan struct{})}
	close(e.done)
	return e
}

// wait waits for the early move to end.
func (e *earlyMove) wait() { <-e.done }

// leader waits for the early move to end and returns the client connected to the member it
// handed leadership to, else c. A promotion sent before the move ended would reach the old
// leader, wait there for the new member, and be forwarded only once leadership had moved and
// the old leader's retry came round; the move takes milliseconds, the new member's start tens
// of them, and the early move gives up on a voter within statusWithin.
func (e *earlyMove) leader(c *client.Client) *client.Client {
	e.wait()
	if e.via != nil {
		return e.via
	}
	return c
}

// endEarlyMove waits for the early move to end and closes the connection kept for the removal.
// A move that step 3 has not reported, the command stopping before it, is reported here: the
// operator learns of every change made.
func (o *memberReplaceOptions) endEarlyMove(e *earlyMove) {
	e.wait()
	if e.to != 0 && !e.reported {
		fmt.Fprintf(o.Err, "leadership moved from %s to %s (%s) while %s started\n", o.OldRef, e.toName, client.FormatID(e.to), o.Name)
	}
	if e.via != nil {
		e.via.Close()
	}
}

// connected is a client connected to url alone, for a removal sent to the leader itself: through
// another member it would be forwarded, and answered by a member that may be the one stopping as
// it applies its own removal. It is nil when the connection failed, or when each connection
// authenticates (--user), which would cost more than the forwarding saves.
func (o *memberReplaceOptions) connected(ctx context.Context, c *client.Client, url string) *client.Client {
	if c.Authenticates() {
		return nil
	}
	next, err := c.Sibling(url)
	if err != nil {
		return nil
	}
	if err := next.Connect(ctx); err != nil {
		next.Close()
		return nil
	}
	return next
}

// moveLeader reports the early move, or hands leadership from the old member to the new one
// when the old one leads, and returns the client the removal goes through. Who leads is read
// from the promotion's answer when the leader itself answered it and says so (clusterd's leader
// does), as it stood once the new member had caught up; otherwise, since a follower's word on
// the leader may be stale, from a linearizable member list. After an early move, a follower's
// answer is taken as it is: leadership left the old member a moment before.
func (o *memberReplaceOptions) moveLeader(ctx context.Context, c *client.Client, promoted *client.ChangeResult, oldID uint64, res *printer.ReplaceResult, early *earlyMove) (*client.Client, error) {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	early.wait()
	var members []client.Member
	if promoted != nil && (early.to != 0 || slices.ContainsFunc(promoted.Members, func(m client.Member) bool { return m.IsLeader && m.ID == promoted.Header.MemberID })) {
		members = promoted.Members
	} else {
		// Asked again: leadership may have moved while the new member caught up.
		list, err := c.MemberList(ctx, true)
		if err != nil {
			return nil, err
		}
		members = list.Members
	}
	leads := slices.ContainsFunc(members, func(m client.Member) bool { return m.ID == oldID && m.IsLeader })
	switch {
	case early.to != 0 && !leads:
		o.step(client.StepMove, "moved leadership from %s to %s (%s)", o.OldRef, early.toName, client.FormatID(early.to))
		early.reported = true
		res.Record(client.PlanStep{Action: client.StepMove}, nil)
		if early.via != nil && slices.ContainsFunc(members, func(m client.Member) bool { return m.ID == early.to && m.IsLeader }) {
			return early.via, nil
		}
		return c, nil
	case !leads:
		o.step(client.StepMove, "%s does not lead: leadership not moved", o.OldRef)
		res.Record(client.PlanStep{Action: client.StepMove, Skip: true}, nil)
		return c, nil
	}
	url, err := clientURLOf(members, oldID)
	if err != nil {
		return nil, err
	}
	newID := res.Added.ID
	if err := moveToPromoted(ctx, c, url, newID); err != nil {
		return nil, err
	}
	o.step(client.StepMove, "moved leadership from %s to %s (%s)", o.OldRef, o.Name, client.FormatID(newID))
	res.Record(client.PlanStep{Action: client.StepMove}, nil)
	return c, nil
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
		if !errors.Is(err, client.ErrBadLeaderTransferee) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
