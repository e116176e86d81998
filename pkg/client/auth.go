package client

import (
	"context"
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// attempt authenticates first when a user was given and no token is held yet, then runs rpc
// with the token. sent is false when rpc's request was not sent, or was refused for its token
// only, which the server checks before doing anything: such a request may be sent elsewhere.
// A token the server no longer knows (it expired, or the member restarted) is replaced once
// and the request sent again, as etcd's clients do.
func (c *Client) attempt(ctx context.Context, rpc func(context.Context, *grpc.ClientConn) error) (sent bool, err error) {
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

// authenticate asks the connected member for a token.
func (c *Client) authenticate(ctx context.Context) error {
	var a pb.AuthenticateResponse
	err := c.conn.Invoke(ctx, pb.Auth_Authenticate_FullMethodName, &pb.AuthenticateRequest{Name: c.username, Password: c.password}, &a)
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

// withToken adds the auth token, if any, to the request's metadata under etcd's key.
func (c *Client) withToken(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, c.token)
}
