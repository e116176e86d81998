package api

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// healthKey is the key etcdctl's endpoint health reads: of etcd's KV service, clusterd answers
// that read alone, empty, and refuses every other call with rpcerr.ErrNoKeys.
const healthKey = "health"

// Range answers a read of the key "health" alone, with no keys: linearizable unless the request
// asks for a serializable read, as etcd answers it, so that the answer proves what etcd's does (a
// leader, and a quorum that confirms it); a serializable one proves only that this member runs.
func (s *Server) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if string(r.GetKey()) != healthKey || len(r.GetRangeEnd()) != 0 {
		return nil, rpcerr.Status(rpcerr.ErrNoKeys)
	}
	if _, err := s.read(ctx, !r.GetSerializable()); err != nil {
		return nil, err
	}
	return &pb.RangeResponse{Header: s.header()}, nil
}

func (*Server) Put(context.Context, *pb.PutRequest) (*pb.PutResponse, error) {
	return nil, rpcerr.Status(rpcerr.ErrNoKeys)
}

func (*Server) DeleteRange(context.Context, *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return nil, rpcerr.Status(rpcerr.ErrNoKeys)
}

func (*Server) Txn(context.Context, *pb.TxnRequest) (*pb.TxnResponse, error) {
	return nil, rpcerr.Status(rpcerr.ErrNoKeys)
}

func (*Server) Compact(context.Context, *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	return nil, rpcerr.Status(rpcerr.ErrNoKeys)
}

// Alarm answers the alarm list etcdctl's endpoint health reads before it counts a member
// healthy: clusterd raises no alarms (it has no space quota and no data of its own to check), so
// the list is empty. Raising or clearing one is refused as etcd's unimplemented method is.
func (s *Server) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if r.GetAction() != pb.AlarmRequest_GET {
		return s.UnimplementedMaintenanceServer.Alarm(ctx, r)
	}
	if err := s.refuseStopped(); err != nil {
		return nil, err
	}
	return &pb.AlarmResponse{Header: s.header()}, nil
}
