package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// Status asks the connected member (or the next reachable one) for its status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st pb.StatusResponse
	if _, err := c.invoke(ctx, true, pb.Maintenance_Status_FullMethodName, &pb.StatusRequest{}, &st); err != nil {
		return nil, err
	}
	return statusOfAnswer(&st), nil
}

// electionGrace is how long a member that knows no leader is asked again before it is taken for
// one without: an election, once under way, ends within about an election timeout (etcd's and
// clusterd's default: 1 s) unless no majority is left to elect anyone. electionPoll is how often
// it is asked meanwhile.
const (
	electionGrace = time.Second
	electionPoll  = 100 * time.Millisecond
)

// waitLeader asks status of a member until it names a leader: nil then, and rpcerr.ErrNoLeader once it
// has named none for electionGrace (or ctx ended first), so that a member caught between two
// leaders is not called leaderless.
func waitLeader(ctx context.Context, status func(context.Context) (*Status, error)) error {
	deadline := time.Now().Add(electionGrace)
	for {
		st, err := status(ctx)
		switch {
		case err != nil:
			return err
		case st.Leader != 0:
			return nil
		case time.Now().After(deadline):
			return rpcerr.ErrNoLeader
		}
		select {
		case <-ctx.Done():
			return rpcerr.ErrNoLeader
		case <-time.After(electionPoll):
		}
	}
}

// statusOf asks member m itself, through its own client URLs, with c's TLS settings and
// credentials.
func (c *Client) statusOf(ctx context.Context, m Member) (*Status, error) {
	if len(m.ClientURLs) == 0 {
		return nil, ErrNoClientURL
	}
	other, err := c.Sibling(m.ClientURLs...)
	if err != nil {
		return nil, err
	}
	defer other.Close()
	return other.Status(ctx)
}

// LearnerProgress is how far a learner's log is behind the leader's.
type LearnerProgress struct {
	// LeaderIndex is the leader's last raft index, LearnerApplied the learner's applied index.
	LeaderIndex    uint64
	LearnerApplied uint64
}

// Behind is the number of entries the learner still has to apply.
func (p LearnerProgress) Behind() uint64 {
	return max(p.LeaderIndex, p.LearnerApplied) - p.LearnerApplied
}

// Percent is the share of the leader's log the learner has applied.
func (p LearnerProgress) Percent() float64 {
	if p.LeaderIndex == 0 {
		return 100
	}
	return 100 * float64(min(p.LearnerApplied, p.LeaderIndex)) / float64(p.LeaderIndex)
}

// LearnerSilentError is a learner that gave no status: not started yet (ErrNoClientURL), or not
// answering on its client URL yet.
type LearnerSilentError struct{ Err error }

func (e *LearnerSilentError) Error() string { return "status of learner: " + e.Err.Error() }
func (e *LearnerSilentError) Unwrap() error { return e.Err }

// FetchLearnerProgress asks the leader and the learner id for their raft indexes, three
// requests in all. The figures are those a promotion is judged by: the server promotes a learner
// once it has nearly caught up.
func (c *Client) FetchLearnerProgress(ctx context.Context, id uint64) (*LearnerProgress, error) {
	list, err := c.MemberList(ctx, false)
	if err != nil {
		return nil, err
	}
	var leader, learner *Member
	for i := range list.Members {
		m := &list.Members[i]
		if m.IsLeader {
			leader = m
		}
		if m.ID == id {
			learner = m
		}
	}
	if learner == nil {
		return nil, rpcerr.ErrMemberNotFound
	}
	if leader == nil {
		return nil, rpcerr.ErrNoLeader
	}
	lst, err := c.statusOf(ctx, *leader)
	if err != nil {
		return nil, fmt.Errorf("status of leader %s: %w", FormatID(leader.ID), err)
	}
	sst, err := c.statusOf(ctx, *learner)
	if err != nil {
		return nil, &LearnerSilentError{Err: err}
	}
	return &LearnerProgress{LeaderIndex: lst.RaftIndex, LearnerApplied: sst.RaftAppliedIndex}, nil
}

// Answers reports whether member m answers on one of its client URLs within within: a member
// that has not started has none and does not. Any answer counts, a refusal too (a member without
// a leader, or one that wants a user, still runs); only a connection that fails or stays silent
// does not. The question is a status, which goes without a login (tokenFree): an answer needs
// none, and a login would cost more than the question (on etcd a raft entry and a password
// hash) and could by itself outlast within.
func (c *Client) Answers(ctx context.Context, m Member, within time.Duration) bool {
	if !m.Started || len(m.ClientURLs) == 0 {
		return false
	}
	for _, st := range c.StatusOfEach(ctx, m.ClientURLs, within) {
		if _, answered := errors.AsType[*ServerError](st.Err); st.Err == nil || answered {
			return true
		}
	}
	return false
}

// Serves reports whether member id serves: a started voter in a linearizable member list, which
// answers a linearizable read through its own first client URL (the read etcdctl's endpoint
// health makes: checkHealth), with c's TLS settings and credentials. nil when both hold, else
// what is missing.
func (c *Client) Serves(ctx context.Context, id uint64) error {
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list.Members, func(m Member) bool { return m.ID == id })
	switch {
	case i < 0:
		return rpcerr.ErrMemberNotFound
	case list.Members[i].IsLearner:
		return errors.New("still a learner")
	case !list.Members[i].Started || len(list.Members[i].ClientURLs) == 0:
		return errors.New("not started yet")
	}
	url := list.Members[i].ClientURLs[0]
	one, err := c.Sibling(url)
	if err != nil {
		return err
	}
	defer one.Close()
	if err := one.checkHealth(ctx); err != nil {
		return fmt.Errorf("a linearizable read on %s: %w", url, err)
	}
	return nil
}
