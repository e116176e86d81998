package client

import (
	"context"
	"errors"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// tokenFree are the requests etcd serves without reading a token, also with auth on:
// Maintenance.Status (etcd's auth wrapper checks the root role on every Maintenance call but
// Status) and Cluster.MemberList (a member change checks the root role; the list reads nothing
// auth guards); and clusterd's history, which etcd does not serve and clusterd, without etcd's
// auth, serves on its TLS settings alone. They go without a token and never wait for a login: on
// etcd a login is a raft entry and needs a leader, and these are the reads that must answer
// without one.
var tokenFree = map[string]bool{
	pb.Maintenance_Status_FullMethodName: true,
	pb.Cluster_MemberList_FullMethodName: true,
	wire.HistoryList:                     true,
}

// attempt runs rpc, the call of method, with the user's token when method needs one:
// authenticating first when a user was given and no token is held yet. sent is false when rpc's
// request was not sent, or was refused for its token only, which the server checks before doing
// anything: such a request may be sent elsewhere. A token the server no longer knows (it
// expired, or the member restarted) is replaced once and the request sent again, as etcd's
// clients do.
func (c *Client) attempt(ctx context.Context, method string, rpc func(context.Context, *grpc.ClientConn) error) (sent bool, err error) {
	if tokenFree[method] {
		return true, rpc(ctx, c.conn)
	}
	if c.username != "" && !c.authed {
		if err := c.authenticate(ctx); err != nil {
			return false, err
		}
	}
	err = rpc(c.withToken(ctx), c.conn)
	if se := serverAnswer(err); c.username == "" || se == nil || !errors.Is(se, rpcerr.ErrInvalidAuthToken) {
		return true, err
	}
	if err := c.authenticate(ctx); err != nil {
		return false, err
	}
	return true, rpc(c.withToken(ctx), c.conn)
}

// loginPatience is how long a login may take before the connected member is asked whether it
// knows a leader: a login answers within it on a cluster with one, and on etcd a login is a raft
// entry, which without a leader waits for the whole deadline.
const loginPatience = 200 * time.Millisecond

// authenticate asks the connected member for a token. A login not answered within loginPatience
// is bounded by the member's own status, which needs no token and no leader: once it has named
// no leader for an election's length (waitLeader), the login is given up with rpcerr.ErrNoLeader, as a
// read without a leader ends, rather than waited for until the deadline.
func (c *Client) authenticate(ctx context.Context) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The goroutines below may outlive this call (the status loop ends at its next look once
	// lctx is cancelled): they read no field of c, which the caller may Close meanwhile.
	conn := c.conn
	// a is read only once done has answered.
	var a pb.AuthenticateResponse
	done := make(chan error, 1)
	go func() {
		done <- conn.Invoke(lctx, pb.Auth_Authenticate_FullMethodName, &pb.AuthenticateRequest{Name: c.username, Password: c.password}, &a)
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(loginPatience):
		leader := make(chan error, 1)
		go func() { leader <- waitLeader(lctx, connStatus(conn)) }()
		select {
		case err = <-done:
		case lerr := <-leader:
			if !errors.Is(lerr, rpcerr.ErrNoLeader) || ctx.Err() != nil {
				err = <-done
				break
			}
			return rpcerr.ErrNoLeader
		}
	}
	if se := serverAnswer(err); se != nil && (rpctypes.Error(se) == rpctypes.ErrAuthNotEnabled || se.Code == codes.Unimplemented) {
		// No auth on this server (clusterd has no Auth service), so no token, as in etcd's
		// clients: its TLS settings decide.
		c.authed, c.token = true, ""
		return nil
	}
	if err != nil {
		return err
	}
	c.authed, c.token = true, a.GetToken()
	return nil
}

// connStatus asks the member at the end of conn, and no other, for its status: safe beside
// another call on the same connection, as call's reconnections are not.
func connStatus(conn *grpc.ClientConn) func(context.Context) (*Status, error) {
	return func(ctx context.Context) (*Status, error) {
		var st pb.StatusResponse
		if err := conn.Invoke(ctx, pb.Maintenance_Status_FullMethodName, &pb.StatusRequest{}, &st); err != nil {
			return nil, err
		}
		return statusOfAnswer(&st), nil
	}
}

// withToken adds the auth token, if any, to the request's metadata under etcd's key.
func (c *Client) withToken(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, c.token)
}

// sharedLogin returns a function that gives one, the client of one endpoint among several
// asked at once, c's token: c authenticates on the first call only, through the first of its
// endpoints that answers, so that the endpoints' clients share one Authenticate rather than
// making one a member. On etcd each is a raft entry, and a status taken while they land shows
// members behind the leader by the command's own entries. Only a call that needs a token calls
// it, so a command that needs none never waits for a login that a cluster without a leader
// cannot give. Advice only: when c's login fails, one authenticates itself in its own call and
// reports its own error. The returned function is safe for concurrent use; a caller waits for
// the login under way.
func (c *Client) sharedLogin() func(ctx context.Context, one *Client) {
	if c.username == "" || c.authed {
		return func(context.Context, *Client) {}
	}
	var once sync.Once
	return func(ctx context.Context, one *Client) {
		// Bounded by the first caller's context, as its own login would be.
		once.Do(func() {
			_ = c.call(ctx, true, pb.Auth_Authenticate_FullMethodName, func(context.Context, *grpc.ClientConn) error { return nil })
		})
		if c.authed {
			one.token, one.authed = c.token, true
		}
	}
}

// CheckLogin logs in, for a command whose calls need no token (cluster status, endpoint status)
// but whose user should still learn that the password is wrong. It runs after the reads, so that
// no status shows a member behind by the command's own Authenticate (on etcd a raft entry), and
// only when leaderKnown (a member answered that it knows a leader): without one the login cannot
// succeed and is skipped rather than waited for. It returns the server's refusal of the user or
// password, nil otherwise: a login that only timed out changes nothing the reads showed.
func (c *Client) CheckLogin(ctx context.Context, leaderKnown bool) error {
	if c.username == "" || c.authed || !leaderKnown {
		return nil
	}
	err := c.call(ctx, true, pb.Auth_Authenticate_FullMethodName, func(context.Context, *grpc.ClientConn) error { return nil })
	if errors.Is(err, rpcerr.ErrAuthFailed) || errors.Is(err, rpcerr.ErrUserNotFound) {
		return err
	}
	return nil
}
