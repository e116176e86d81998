package metrics

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"google.golang.org/grpc"
)

// newGRPCMetrics makes grpc_server_started_total, grpc_server_handled_total,
// grpc_server_msg_received_total and grpc_server_msg_sent_total, from the library etcd itself
// uses for them, in etcd's default configuration (no handling-time histogram: etcd adds it only
// with --metrics=extensive). Using the same library is what makes names, help texts, label
// names and the grpc_type and grpc_code values the same as etcd's without copying them.
func newGRPCMetrics() *grpcprom.ServerMetrics { return grpcprom.NewServerMetrics() }

// GRPCServerOptions are the interceptors to give grpc.NewServer for the client API (etcd's v3
// services on the client listeners), and only there: etcd's gRPC metrics cover its client API,
// and the peer services' stream ends (a removed member refused, an idle stream closed) would
// otherwise count as failed requests in etcd's alerts on grpc_server_handled_total.
func (m *Metrics) GRPCServerOptions() []grpc.ServerOption {
	if m == nil {
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.grpc.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.grpc.StreamServerInterceptor()),
	}
}

// InitGRPC creates the series of every method registered on s at zero, as etcd does, so that
// an error ratio has a denominator before the first request. Call it after the services are
// registered and before Serve.
func (m *Metrics) InitGRPC(s *grpc.Server) {
	if m == nil {
		return
	}
	m.grpc.InitializeMetrics(s)
}
