package reconfig

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// ClusterInfo is a member's answer to a Membership call: what a joining member checks its
// flags against.
type ClusterInfo struct {
	Cluster *membership.Cluster `json:"cluster"`
	Applied uint64              `json:"applied"`
	Leader  membership.ID       `json:"leader"`
}

type empty struct{}

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
			{MethodName: "Change", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				req := &Request{}
				if err := dec(req); err != nil {
					return nil, err
				}
				if c.cfg.Node.Leader() != c.cfg.Node.ID() {
					// Never forward twice: the caller re-routes.
					return nil, toStatus(raftnode.ErrNotLeader)
				}
				reply, err := c.decide(ctx, *req)
				if err != nil {
					return nil, toStatus(err)
				}
				// The caller answers its client with the members; the removed IDs, as many as the
				// cluster's whole history, would cost every forwarded change their encoding.
				reply.Cluster = reply.Cluster.WithoutRemoved()
				return reply, nil
			}},
			{MethodName: "Membership", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(&empty{}); err != nil {
					return nil, err
				}
				return &ClusterInfo{Cluster: c.cfg.Node.Cluster(), Applied: c.cfg.Node.Applied(), Leader: c.cfg.Node.Leader()}, nil
			}},
		},
	}, struct{}{})
}

func toStatus(err error) error {
	code := codes.Unknown
	if err == raftnode.ErrNotLeader || err == raftnode.ErrProposalLost {
		code = codes.Unavailable
	}
	return status.Error(code, err.Error())
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
	if err := conn.Invoke(ctx, changeMethod, &req, reply); err != nil {
		return nil, FromStatus(err)
	}
	return reply, nil
}

func (c *Coordinator) conn(url string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[url]; ok {
		return conn, nil
	}
	conn, err := transport.Dial(url)
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

// FetchMembership asks a member, by its peer URL, for the membership it has applied.
func FetchMembership(ctx context.Context, peerURL string) (*ClusterInfo, error) {
	conn, err := transport.Dial(peerURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	info := &ClusterInfo{}
	if err := conn.Invoke(ctx, membershipMethod, &empty{}, info); err != nil {
		return nil, fmt.Errorf("%s: %w", peerURL, FromStatus(err))
	}
	return info, nil
}
