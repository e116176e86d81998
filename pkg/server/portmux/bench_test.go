package portmux

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/pkg/server/servertls"
)

// What a short-lived client such as clusterctl pays: a new connection and one unary call, on a
// listener of gRPC's own and on the gRPC half of a mux. The difference is the sniff.
func BenchmarkDialAndCall(b *testing.B) {
	for _, muxed := range []bool{false, true} {
		name := "plain"
		if muxed {
			name = "mux"
		}
		b.Run(name, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			gs := grpc.NewServer()
			healthpb.RegisterHealthServer(gs, health.NewServer())
			defer gs.Stop()
			serving := l
			if muxed {
				m := New(l, 5*time.Second)
				defer m.Close()
				go func() { _ = m.Serve() }()
				serving = m.GRPC()
			}
			go func() { _ = gs.Serve(serving) }()
			b.ResetTimer()
			for range b.N {
				conn, err := grpc.NewClient("passthrough:///"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
		})
	}
}

// The same over TLS with client certificates, as clusterctl reaches an https:// client URL:
// gRPC's own TLS credentials on a listener of its own (how clusterd served it before the mux),
// and the gRPC half of a TLS mux behind servertls.Terminated. Each call pays a full handshake.
func BenchmarkDialAndCallTLS(b *testing.B) {
	p := serveTLSMux(b, 5*time.Second)
	cfg := p.clientConfig(b, "bench")
	srvCfg := p.mux.tls.cfg.Clone()
	srvCfg.NextProtos, srvCfg.GetConfigForClient = []string{"h2"}, nil
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(servertls.Credentials(srvCfg, nil)))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	defer gs.Stop()
	go func() { _ = gs.Serve(l) }()
	for _, tt := range []struct{ name, addr string }{{"grpc-tls", l.Addr().String()}, {"mux-tls", p.addr}} {
		b.Run(tt.name, func(b *testing.B) {
			for range b.N {
				conn, err := grpc.NewClient("passthrough:///"+tt.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
		})
	}
}
