package api

import (
	"context"
	"encoding/json"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/authz"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// registerHistory adds clusterd's History service (pkg/wire) beside etcd's.
func (s *Server) registerHistory(g *grpc.Server) {
	g.RegisterService(&grpc.ServiceDesc{
		ServiceName: wire.HistoryService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: wire.HistoryMethod, Handler: func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			req := &wrapperspb.BytesValue{}
			if err := dec(req); err != nil {
				return nil, err
			}
			if in == nil {
				return s.history(ctx, req)
			}
			return in(ctx, req, &grpc.UnaryServerInfo{Server: s, FullMethod: wire.HistoryList}, func(ctx context.Context, r any) (any, error) {
				return s.history(ctx, r.(*wrapperspb.BytesValue))
			})
		}}},
	}, s)
}

// history answers the events of the membership history the request selects: linearizable
// through ReadIndex, as MemberList, or from this member's applied state.
func (s *Server) history(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	var req wire.HistoryRequest
	if err := json.Unmarshal(in.GetValue(), &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "history request: %v", err)
	}
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	c := s.cfg.Node.Cluster()
	if req.Linearizable {
		rctx, cancel := s.withTimeout(ctx)
		defer cancel()
		var err error
		if c, err = s.cfg.Node.ReadIndex(rctx); err != nil {
			return nil, rpcerr.Status(err)
		}
	}
	h := s.header()
	b, err := json.Marshal(wire.HistoryAnswer{
		ClusterID: membership.ID(h.ClusterId), MemberID: membership.ID(h.MemberId), RaftTerm: h.RaftTerm,
		Events: selectEvents(c.History.Events(), req), Dropped: c.History.Dropped(),
	})
	if err != nil {
		return nil, rpcerr.Status(err)
	}
	return wrapperspb.Bytes(b), nil
}

// selectEvents keeps the events req asks for, oldest first: of one member, since a time, the
// newest Limit.
func selectEvents(events []membership.Event, req wire.HistoryRequest) []membership.Event {
	id, idErr := strconv.ParseUint(req.Member, 16, 64)
	out := events[:0]
	for _, ev := range events {
		if req.Member != "" && ev.Name != req.Member && (idErr != nil || uint64(ev.MemberID) != id) {
			continue
		}
		if !req.Since.IsZero() && (ev.Time.IsZero() || ev.Time.Before(req.Since)) {
			continue
		}
		out = append(out, ev)
	}
	if req.Limit > 0 && len(out) > req.Limit {
		out = out[len(out)-req.Limit:]
	}
	return out
}

// origin is who sent the change in ctx, for the history: the client's address as this member
// saw it, its verified certificate's CN, and the clusterctl command it names, if known.
func origin(ctx context.Context) membership.Origin {
	o := membership.Origin{CN: authz.VerifiedCN(ctx)}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		o.Address = p.Addr.String()
	}
	if v := incoming(ctx, wire.MDVia); wire.KnownVia(v) {
		o.Via = v
	}
	return o
}
