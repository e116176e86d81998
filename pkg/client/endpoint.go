package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// The per-endpoint calls of endpoint status, endpoint health and move-leader: each endpoint is
// dialed on its own, as etcdctl does, so that one member that does not answer is one row with
// its error and never hides the others.

// Status is one member's Maintenance.Status answer.
type Status struct {
	Header  Header
	Version string
	// DBSize and DBSizeInUse are the database's size as the server reports it (etcd: its backend's
	// pages; clusterd: bbolt's pages up to the high-water mark) and the part of it in use, in bytes.
	DBSize, DBSizeInUse int64
	Leader              uint64
	RaftTerm            uint64
	// RaftIndex is the member's raft index (etcd's committed index, clusterd's last log index),
	// RaftAppliedIndex the index it has applied.
	RaftIndex, RaftAppliedIndex uint64
	IsLearner                   bool
	// Errors are the member's own alarms and conditions ("etcdserver: no leader").
	Errors []string
}

// IsLeader reports whether the member that answered leads, by its own account.
func (s *Status) IsLeader() bool { return s.Leader != 0 && s.Leader == s.Header.MemberID }

// EndpointStatus is the status of one endpoint: Status when it answered, Err when it did not.
type EndpointStatus struct {
	Endpoint string
	Status   *Status
	Err      error
}

// EndpointHealth is the result of one endpoint's health check: Err says why it is unhealthy.
type EndpointHealth struct {
	Endpoint string
	Took     time.Duration
	Err      error
}

// Healthy reports whether the check passed.
func (h EndpointHealth) Healthy() bool { return h.Err == nil }

// Sibling is a client of the given endpoints (a member's client URLs, tried in order), with c's
// transport security, credentials and dial timeout, that connects on first use or at Connect.
// It is the one way a command builds a client for another endpoint than those it was given, so
// that every call it makes carries what the command was given. An endpoint of the other kind
// than c's (https:// among http:// ones) is refused, as New refuses such a list.
func (c *Client) Sibling(endpoints ...string) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no endpoints given")
	}
	first := c.dialed[0]
	// The token too, once c holds one: etcd assigns a token on every member as it applies the
	// Authenticate entry, so each sibling need not make an entry of its own (a member that has
	// not applied it yet answers "invalid auth token", and the sibling authenticates itself).
	one := *c
	one.endpoints, one.dialed, one.conn, one.at = nil, nil, nil, 0
	for _, endpoint := range endpoints {
		addr, secure, err := parseEndpoint(endpoint, first.TLS)
		if err != nil {
			return nil, err
		}
		if secure != first.TLS {
			return nil, fmt.Errorf("endpoint %q: one uses TLS and %q does not; give endpoints of one kind", endpoint, first.Endpoint)
		}
		one.endpoints = append(one.endpoints, addr)
		one.dialed = append(one.dialed, clienttls.Dialed{Endpoint: endpoint, TLS: secure, ClientCert: first.ClientCert})
	}
	return &one, nil
}

// At is a client of endpoint alone: c's own connection when c is connected there, which saves a
// connection, a TLS handshake and an authentication, and otherwise a sibling. It shares no field
// that c changes later, only the connection, which is safe for concurrent use: another goroutine
// may use it while c goes on (its calls fail once c closes that connection). release closes what
// was opened for the caller, never c's connection.
func (c *Client) At(endpoint string) (one *Client, release func(), err error) {
	if c.conn != nil {
		if addr, secure, err := parseEndpoint(endpoint, c.dialed[c.at].TLS); err == nil && addr == c.endpoints[c.at] && secure == c.dialed[c.at].TLS {
			view := *c
			view.endpoints, view.dialed, view.at = c.endpoints[c.at:c.at+1], c.dialed[c.at:c.at+1], 0
			return &view, func() {}, nil
		}
	}
	if one, err = c.Sibling(endpoint); err != nil {
		return nil, nil, err
	}
	return one, func() { one.Close() }, nil
}

// onEach runs fn against every endpoint at once, each on its own client and bounded by timeout,
// and returns when all have finished. fn calls login before a request that needs the user's
// token, so that the endpoints share one login (sharedLogin) and a request that needs none never
// waits for it.
func (c *Client) onEach(ctx context.Context, endpoints []string, timeout time.Duration, fn func(ctx context.Context, i int, one *Client, login func(context.Context, *Client)) error) []error {
	login := c.sharedLogin()
	errs := make([]error, len(endpoints))
	// Every client is made before any call starts: a sibling copies c, and the shared login
	// writes c's connection and token while the calls run.
	ones := make([]*Client, len(endpoints))
	for i, ep := range endpoints {
		ones[i], errs[i] = c.Sibling(ep)
	}
	var wg sync.WaitGroup
	for i, one := range ones {
		if one == nil {
			continue
		}
		wg.Go(func() {
			// The process usually ends right after; closing is for callers that go on.
			defer one.Close()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = fn(ctx, i, one, login)
		})
	}
	wg.Wait()
	return errs
}

// StatusOfEach asks every endpoint for its status, all at once, each within timeout. Status
// needs no token and no leader, so it answers on a cluster that lost its majority, with a user
// too.
func (c *Client) StatusOfEach(ctx context.Context, endpoints []string, timeout time.Duration) []EndpointStatus {
	out := make([]EndpointStatus, len(endpoints))
	errs := c.onEach(ctx, endpoints, timeout, func(ctx context.Context, i int, one *Client, _ func(context.Context, *Client)) (err error) {
		out[i].Status, err = one.Status(ctx)
		return err
	})
	for i, ep := range endpoints {
		out[i].Endpoint, out[i].Err = ep, errs[i]
	}
	return out
}

// HealthOfEach checks every endpoint at once, each within timeout. Each member is first asked
// for its status, which needs no token and no leader: one that knows no leader for an election's
// length (waitLeader) is unhealthy (rpcerr.ErrNoLeader), without waiting for a login or a read that
// cannot succeed before the deadline. Only the others log in, once for all, and read.
func (c *Client) HealthOfEach(ctx context.Context, endpoints []string, timeout time.Duration) []EndpointHealth {
	out := make([]EndpointHealth, len(endpoints))
	errs := c.onEach(ctx, endpoints, timeout, func(ctx context.Context, i int, one *Client, login func(context.Context, *Client)) error {
		start := time.Now()
		defer func() { out[i].Took = time.Since(start) }()
		if err := waitLeader(ctx, one.Status); err != nil {
			return err
		}
		login(ctx, one)
		return one.checkHealth(ctx)
	})
	for i, ep := range endpoints {
		out[i].Endpoint, out[i].Err = ep, errs[i]
	}
	return out
}

// healthKey is the key etcdctl reads to check an endpoint's health.
const healthKey = "health"

// checkHealth proves that the member serves a linearizable read, which needs a leader and a
// quorum: on etcd the read etcdctl makes (a linearizable get of "health", where a permission
// denied answer still proves it, as etcdctl counts it); on clusterd, which has no KV service, a
// linearizable member list.
func (c *Client) checkHealth(ctx context.Context) error {
	_, err := c.invoke(ctx, true, pb.KV_Range_FullMethodName, &pb.RangeRequest{Key: []byte(healthKey)}, &pb.RangeResponse{})
	switch {
	case err == nil, errors.Is(err, rpcerr.ErrPermissionDenied):
		return nil
	case unimplemented(err):
		_, _, err = c.list(ctx, true)
		return err
	}
	return err
}

// MoveLeader asks the leader at endpoint leaderEndpoint to hand leadership to member target;
// it answers once target leads.
func (c *Client) MoveLeader(ctx context.Context, leaderEndpoint string, target uint64) (*Header, error) {
	one, release, err := c.At(leaderEndpoint)
	if err != nil {
		return nil, err
	}
	defer release()
	var a pb.MoveLeaderResponse
	if _, err := one.invoke(ctx, false, pb.Maintenance_MoveLeader_FullMethodName, &pb.MoveLeaderRequest{TargetID: target}, &a); err != nil {
		return nil, err
	}
	h := headerOf(a.GetHeader())
	return &h, nil
}

// GivenEndpoints are the endpoints as given, scheme included, in order of preference.
func (c *Client) GivenEndpoints() []string {
	out := make([]string, len(c.dialed))
	for i, d := range c.dialed {
		out[i] = d.Endpoint
	}
	return out
}

// LocalMemberList is a serializable member list without MemberList's extra request for the
// leader: the members as the first member that answers has applied them, also without a leader,
// which is what a command that asks every member itself needs.
func (c *Client) LocalMemberList(ctx context.Context) ([]Member, error) {
	r, _, err := c.list(ctx, false)
	if err != nil {
		return nil, err
	}
	return r.Members, nil
}
