package api

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
)

// MoveLeader hands leadership to the voter r.TargetID through raft's leadership transfer and
// answers once it leads, as etcd's Maintenance.MoveLeader: only the leader takes it
// (ErrNotLeader), the target must be a voter the leader has heard from within an election
// timeout (ErrBadLeaderTransferee), and a transfer that does not finish before the request's
// deadline is ErrLeaderTransferTimedOut. It is an admin operation (pkg/server/authz).
func (s *Server) MoveLeader(ctx context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	n := s.cfg.Node
	to := membership.ID(r.GetTargetID())
	if err := checkTransferee(n, to); err != nil {
		return nil, rpcerr.Status(err)
	}
	if to != n.ID() {
		ctx, cancel := transferTimeout(s.withTimeout(ctx))
		defer cancel()
		// A member promoted a moment ago may not have applied its promotion yet.
		s.cfg.Coordinator.AwaitVoter(ctx, to)
		if err := n.TransferLeadership(ctx, to); err != nil {
			if errors.Is(err, raftnode.ErrTimeout) || ctx.Err() != nil {
				err = rpcerr.ErrLeaderTransferTimedOut
			}
			return nil, rpcerr.Status(err)
		}
	}
	return &pb.MoveLeaderResponse{Header: s.header()}, nil
}

// transferTimeout leaves the caller a quarter of its time to receive the answer, so that a
// transfer that does not finish is answered ErrLeaderTransferTimedOut rather than left to the
// caller's deadline.
func transferTimeout(ctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	d, _ := ctx.Deadline()
	tctx, tcancel := context.WithTimeout(ctx, time.Until(d)*3/4)
	return tctx, func() { tcancel(); cancel() }
}

// checkTransferee refuses a transfer this member cannot make: it does not lead, or to cannot
// lead (unknown, a learner, or not heard from lately). A transfer to the leader itself is
// accepted and does nothing, as in etcd.
func checkTransferee(n *raftnode.Node, to membership.ID) error {
	if n.Leader() != n.ID() {
		return rpcerr.ErrNotLeader
	}
	if m := n.Cluster().Member(to); m == nil || m.IsLearner || to != n.ID() && !n.Live(to) {
		return rpcerr.ErrBadLeaderTransferee
	}
	return nil
}
