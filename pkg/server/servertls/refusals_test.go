package servertls

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/internal/testkit/logtest"
)

// grpcServer serves the health service on 127.0.0.1 with creds.
func grpcServer(t *testing.T, creds credentials.TransportCredentials) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(creds))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// check makes one RPC on a new connection, so each call is one more handshake.
func check(addr string, cfg *tls.Config) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// waitFor polls until cond holds: the server logs after the client has already seen the
// refusal.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRefusedPeerIsLoggedOncePerPeer(t *testing.T) {
	f := newFixture(t)
	s := f.peerSettings()
	s.Peer.AllowedCNs = []string{"m1", "m2"}
	logs := &logtest.Recorder{}
	refusals := NewRefusals(slog.New(logs), "peer", time.Hour)
	// The handshakes read the clock on the server's goroutines.
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	refusals.now = func() time.Time { return time.Unix(0, clock.Load()) }
	addr := grpcServer(t, Credentials(build(t, s).PeerServer, refusals))

	stranger := clientCfg(f, must(t)(f.other.Peer("m2")))
	intruder := clientCfg(f, must(t)(f.ca.Peer("m3")))
	member := clientCfg(f, must(t)(f.ca.Peer("m2")))

	const attempts = 5
	for range attempts {
		if err := check(addr, stranger); err == nil {
			t.Fatal("a certificate from another CA got through")
		}
	}
	waitFor(t, "the refusal to be logged", func() bool { return logs.Count("rejected connection") >= 1 })
	for range attempts {
		if err := check(addr, intruder); err == nil {
			t.Fatal("a CN not allowed got through")
		}
	}
	waitFor(t, "the second peer to be logged", func() bool { return logs.Count("rejected connection") >= 2 })
	if err := check(addr, member); err != nil {
		t.Fatalf("an allowed member was refused: %v", err)
	}
	// Let any straggling handshake be counted before asserting nothing more was logged.
	time.Sleep(50 * time.Millisecond)
	if n := logs.Count("rejected connection"); n != 2 {
		t.Fatalf("%d lines for 2 refused peers of %d attempts each:\n%s", n, attempts, logs)
	}
	first, second := logs.Attrs(0), logs.Attrs(1)
	if first["port"] != "peer" || first["cn"] != "m2" || first["issuer"] != "other" || !strings.Contains(first["error"], "unknown authority") {
		t.Errorf("first line: %v", first)
	}
	if second["cn"] != "m3" || !strings.Contains(second["error"], "--peer-cert-allowed-cn") {
		t.Errorf("second line: %v", second)
	}
	if !strings.HasPrefix(first["remote-addr"], "127.0.0.1:") {
		t.Errorf("remote-addr %q", first["remote-addr"])
	}

	// After the interval the same peer is logged again, with the attempts not logged.
	clock.Add(int64(time.Hour))
	if err := check(addr, stranger); err == nil {
		t.Fatal("refused peer got through")
	}
	waitFor(t, "the reminder", func() bool { return logs.Count("rejected connection") == 3 })
	if got := logs.Attrs(2)["not-logged-since"]; got != "4" {
		t.Errorf("not-logged-since = %q, want 4", got)
	}
}

func TestDialingARefusedPeerIsLoggedOnce(t *testing.T) {
	f := newFixture(t)
	foreign, err := f.other.Peer("m2")
	if err != nil {
		t.Fatal(err)
	}
	addr := grpcServer(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{must2(t, foreign)}}))
	logs := &logtest.Recorder{}
	dialer := Credentials(build(t, f.peerSettings()).PeerClient, NewRefusals(slog.New(logs), "peer", 0))
	for range 3 {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(dialer))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		conn.Close()
		if err == nil {
			t.Fatal("dialed a peer the CA did not sign")
		}
	}
	if n := logs.Count("rejected connection"); n != 1 {
		t.Fatalf("%d lines, want 1:\n%s", n, logs)
	}
}

func TestRefusalsIgnoreProbes(t *testing.T) {
	logs := &logtest.Recorder{}
	r := NewRefusals(slog.New(logs), "client", time.Hour)
	r.Refused("10.0.0.1:1234", errors.New("EOF"))       // not io.EOF itself: logged
	r.Refused("10.0.0.1:1235", context.Canceled)        // benign
	r.Refused("10.0.0.1:1236", io.EOF)                  // a TCP probe
	r.Refused("10.0.0.1:1237", errors.New("EOF"))       // same peer, same kind: not logged
	r.Refused("10.0.0.2:1237", errors.New("EOF"))       // other host
	r.Refused("10.0.0.2:1238", tls.RecordHeaderError{}) // other kind
	if n := logs.Count("rejected connection"); n != 3 {
		t.Fatalf("%d lines, want 3:\n%s", n, logs)
	}
	// How much is remembered is logfmt.Limiter's bound (its tests).
}
