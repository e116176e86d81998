package metrics

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestGRPCServerMetrics serves a real gRPC service through the interceptors and checks the
// series etcd's dashboards read: started, handled by code, and messages.
func TestGRPCServerMetrics(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	srv := grpc.NewServer(m.GRPCServerOptions()...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	m.InitGRPC(srv)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	// Initialised at zero before any call, as etcd does.
	_, fams := scrape(t, m)
	wantValue(t, fams, 0, "grpc_server_handled_total", "Unavailable", "Check", "grpc.health.v1.Health", "unary")

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check(nope): %v, want NotFound", err)
	}

	_, fams = scrape(t, m)
	// Label values are in label-name order: grpc_code, grpc_method, grpc_service, grpc_type.
	wantValue(t, fams, 2, "grpc_server_started_total", "Check", "grpc.health.v1.Health", "unary")
	wantValue(t, fams, 1, "grpc_server_handled_total", "OK", "Check", "grpc.health.v1.Health", "unary")
	wantValue(t, fams, 1, "grpc_server_handled_total", "NotFound", "Check", "grpc.health.v1.Health", "unary")
	wantValue(t, fams, 2, "grpc_server_msg_received_total", "Check", "grpc.health.v1.Health", "unary")
	wantValue(t, fams, 2, "grpc_server_msg_sent_total", "Check", "grpc.health.v1.Health", "unary")
	wantValue(t, fams, 0, "grpc_server_started_total", "Watch", "grpc.health.v1.Health", "server_stream")
	for name, help := range map[string]string{
		"grpc_server_started_total":      "Total number of RPCs started on the server.",
		"grpc_server_handled_total":      "Total number of RPCs completed on the server, regardless of success or failure.",
		"grpc_server_msg_received_total": "Total number of RPC stream messages received on the server.",
		"grpc_server_msg_sent_total":     "Total number of gRPC stream messages sent by the server.",
	} {
		if got := fams[name].GetHelp(); got != help {
			t.Errorf("%s: help %q, etcd's is %q", name, got, help)
		}
	}
}
