package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// HistoryQuery selects events of the membership history (wire.HistoryRequest).
type HistoryQuery = wire.HistoryRequest

// HistoryResult is the events selected, oldest first, and how many older events the answering
// member dropped to keep its history bounded.
type HistoryResult struct {
	Header  Header
	Events  []membership.Event
	Dropped uint64
}

// HistoryUnsupportedError reports a member that keeps no membership history: etcd, or a clusterd
// older than the history. Nothing was read.
type HistoryUnsupportedError struct {
	Endpoint string
	// Version is what the member's status says it runs, "" when it did not say.
	Version string
}

func (e *HistoryUnsupportedError) Error() string {
	runs := ""
	if e.Version != "" {
		runs = " (version " + e.Version + ")"
	}
	return fmt.Sprintf("membership history is clusterd's: the member at %s%s keeps none", e.Endpoint, runs)
}

// maxHistoryAnswer bounds an answer: a whole history of the default bound is a few megabytes,
// over gRPC's default of 4.
const maxHistoryAnswer = 256 << 20

// MemberHistory reads the membership history q selects. A member without one (etcd, an older
// clusterd) is a *HistoryUnsupportedError, a peer URL given as endpoint a *PeerEndpointError.
func (c *Client) MemberHistory(ctx context.Context, q HistoryQuery) (*HistoryResult, error) {
	var a *cpb.HistoryAnswer
	err := c.call(ctx, true, wire.HistoryList, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		a, err = cpb.NewHistoryClient(conn).List(ctx, q.Proto(), grpc.MaxCallRecvMsgSize(maxHistoryAnswer))
		return err
	})
	if unimplemented(err) {
		return nil, c.historyUnsupported(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &HistoryResult{
		Header:  Header{ClusterID: a.GetClusterId(), MemberID: a.GetMemberId(), RaftTerm: a.GetRaftTerm()},
		Events:  wire.EventsFromProto(a.GetEvents()),
		Dropped: a.GetDropped(),
	}, nil
}

// historyUnsupported is the error for a member that does not know the history call: it says
// what the member runs when its status tells, and a peer URL is told apart by the status call
// failing as one.
func (c *Client) historyUnsupported(ctx context.Context) error {
	endpoint := c.shown(c.at)
	st, err := c.Status(ctx)
	if peer, ok := errors.AsType[*PeerEndpointError](err); ok {
		return peer
	}
	e := &HistoryUnsupportedError{Endpoint: endpoint}
	if err == nil {
		e.Version = st.Version
	}
	return e
}

// WithVia marks the changes made with ctx as made by the clusterctl command via (one of wire's
// Via values), for clusterd's membership history, in place of an earlier mark; etcd ignores it.
func WithVia(ctx context.Context, via string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(wire.MDVia, via)
	return metadata.NewOutgoingContext(ctx, md)
}
