package reconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// ClusterInfo is a member's answer to a Membership call: what a joining member checks its
// flags against.
type ClusterInfo struct {
	Cluster *membership.Cluster `json:"cluster"`
	Applied uint64              `json:"applied"`
	Leader  membership.ID       `json:"leader"`
}

const (
	service          = "clusterd.peer.v1.Members"
	changeMethod     = "/" + service + "/Change"
	membershipMethod = "/" + service + "/Membership"
)

// Register adds the Change and Membership calls to a peer gRPC server.
func (c *Coordinator) Register(s *grpc.Server) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Change", Handler: c.serveChange},
			{MethodName: "Membership", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				req := &membershipRequest{}
				if err := dec(req); err != nil {
					return nil, err
				}
				cl := c.cfg.Node.Cluster().WithoutHistory()
				if req.WithoutRemoved {
					cl = cl.WithoutRemoved()
				}
				return &ClusterInfo{Cluster: cl, Applied: c.cfg.Node.Applied(), Leader: c.cfg.Node.Leader()}, nil
			}},
		},
	}, struct{}{})
}

// serveChange decides a request another member forwarded. Errors leave as the registry's
// statuses, which forward reads back as the same values.
func (c *Coordinator) serveChange(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	req := &Request{}
	if err := dec(req); err != nil {
		return nil, err
	}
	if err := c.cfg.Transport.Vouched(ctx); err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	if c.cfg.Node.Leader() != c.cfg.Node.ID() || c.cfg.Node.Stopped() {
		// Never forward twice, and a stopping leader decides nothing more: the caller
		// re-routes.
		return nil, rpcerr.Status(raftnode.ErrNotLeader)
	}
	ctx, cancel := c.cfg.Node.WithStop(ctx)
	defer cancel()
	reply, err := c.decide(ctx, *req)
	if errors.Is(err, raftnode.ErrStopped) {
		// This leader stopped before it proposed anything: the caller tries the next one.
		err = raftnode.ErrNotLeader
	}
	if reply != nil {
		reply = reply.WithoutRemoved()
	}
	if err == nil {
		return reply, nil
	}
	if reply != nil {
		b, jerr := json.Marshal(reply)
		if jerr != nil {
			return nil, rpcerr.Status(jerr)
		}
		_ = grpc.SetHeader(ctx, metadata.Pairs(wire.DryRunReport, string(b)))
	}
	return nil, rpcerr.Status(err)
}

// SendChange sends req over conn as a member forwards a change to its leader, for a program that
// speaks the peer protocol from outside a member (the hostile-peer test); forward is the
// members' own way.
func SendChange(ctx context.Context, conn *grpc.ClientConn, req Request) (*Reply, error) {
	reply := &Reply{}
	if err := conn.Invoke(ctx, changeMethod, &req, reply); err != nil {
		return nil, err
	}
	return reply, nil
}

// fromPeer reads what a call to another member failed with: a registered error by its message,
// as the other member sent it, and otherwise what the call's own failure means for retrying.
func fromPeer(err error) error {
	err = rpcerr.FromStatus(err)
	var known *rpcerr.Error
	if errors.As(err, &known) {
		return err
	}
	st, ok := status.FromError(err)
	switch {
	case !ok:
		return err
	case st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled:
		return raftnode.ErrTimeout
	case st.Code() == codes.Unavailable && strings.HasPrefix(st.Message(), "connection error:"):
		// The leader could not be reached at all: nothing was sent to it.
		return raftnode.ErrNotLeader
	case st.Code() == codes.Unavailable:
		// The connection broke after the request went out: it may have been applied.
		return raftnode.ErrTimeout
	}
	return err
}

func (c *Coordinator) forward(ctx context.Context, lead membership.ID, req Request) (*Reply, error) {
	m := c.cfg.Node.Cluster().Member(lead)
	if m == nil || len(m.PeerURLs) == 0 {
		return nil, raftnode.ErrNotLeader
	}
	conn, err := c.conn(m.PeerURLs[0])
	if err != nil {
		return nil, err
	}
	reply := &Reply{}
	var hdr metadata.MD
	if err := conn.Invoke(ctx, changeMethod, &req, reply, grpc.Header(&hdr)); err != nil {
		err = fromPeer(err)
		report := hdr.Get(wire.DryRunReport)
		if !req.DryRun || len(report) == 0 || retryable(err) {
			return nil, err
		}
		if jerr := json.Unmarshal([]byte(report[0]), reply); jerr != nil {
			return nil, fmt.Errorf("reading the leader's dry-run report: %w", jerr)
		}
		return reply, err
	}
	return reply, nil
}

func (c *Coordinator) conn(url string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[url]; ok {
		return conn, nil
	}
	conn, err := c.cfg.Transport.Dial(url)
	if err != nil {
		return nil, err
	}
	c.conns[url] = conn
	return conn, nil
}

// Close closes the connections to peers.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for url, conn := range c.conns {
		conn.Close()
		delete(c.conns, url)
	}
}

// membershipRequest is a Membership call. WithoutRemoved asks for the members alone, without
// the removed IDs, as many as the cluster's whole history; a member that does not know the
// field sends them anyway.
type membershipRequest struct {
	WithoutRemoved bool `json:"withoutRemoved,omitempty"`
}

// FetchMembership asks a member, by its peer URL, for the membership it has applied; creds
// dial an https:// peer URL (nil without peer TLS settings). withRemoved: the answer is to say
// which IDs were removed, not only who the members are.
func FetchMembership(ctx context.Context, peerURL string, creds credentials.TransportCredentials, withRemoved bool) (*ClusterInfo, error) {
	conn, err := transport.Dial(peerURL, creds)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return MembershipOn(ctx, conn, peerURL, withRemoved)
}

// MembershipOn is FetchMembership on a connection already made to peerURL, for a caller that
// asks the same member again.
func MembershipOn(ctx context.Context, conn *grpc.ClientConn, peerURL string, withRemoved bool) (*ClusterInfo, error) {
	info := &ClusterInfo{}
	if err := conn.Invoke(ctx, membershipMethod, &membershipRequest{WithoutRemoved: !withRemoved}, info); err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
			// Unreachable, or refused at the TLS handshake: gRPC's words say which.
			return nil, fmt.Errorf("%s: %s", peerURL, st.Message())
		}
		return nil, fmt.Errorf("%s: %w", peerURL, fromPeer(err))
	}
	return info, nil
}
