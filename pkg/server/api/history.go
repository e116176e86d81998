package api

import (
	"context"
	"strconv"

	"google.golang.org/grpc/peer"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/authz"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// List answers the events of the membership history the request selects: linearizable through
// ReadIndex, as MemberList, or from this member's applied state.
func (s *Server) List(ctx context.Context, in *cpb.HistoryRequest) (*cpb.HistoryAnswer, error) {
	req := wire.HistoryRequestFromProto(in)
	c, err := s.read(ctx, req.Linearizable)
	if err != nil {
		return nil, err
	}
	hdr := s.header()
	a := &cpb.HistoryAnswer{ClusterId: hdr.ClusterId, MemberId: hdr.MemberId, RaftTerm: hdr.RaftTerm, Dropped: c.History.Dropped()}
	for _, ev := range selectEvents(c.History.Events(), req) {
		a.Events = append(a.Events, wire.EventToProto(ev))
	}
	return a, nil
}

// selectEvents returns the events req asks for, oldest first: of one member, since a time, the
// newest Limit. events is the history's own, and is left as it is.
func selectEvents(events []membership.Event, req wire.HistoryRequest) []membership.Event {
	id, idErr := strconv.ParseUint(req.Member, 16, 64)
	var out []membership.Event
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
