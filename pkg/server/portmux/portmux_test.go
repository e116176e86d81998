package portmux

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serveMux splits a loopback port between a gRPC server (with the health service) and an HTTP
// server that answers every path with "http", and returns its address and a function that
// closes the mux and waits for everything it started.
func serveMux(t *testing.T, timeout time.Duration) (string, *Mux, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := New(l, timeout)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "http") })}
	done := make(chan struct{}, 3)
	go func() { _ = gs.Serve(m.GRPC()); done <- struct{}{} }()
	go func() { _ = hs.Serve(m.HTTP()); done <- struct{}{} }()
	go func() { _ = m.Serve(); done <- struct{}{} }()
	stop := func() {
		m.Close()
		gs.Stop()
		hs.Close()
		for range 3 {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the servers or the mux did not return after Close")
			}
		}
	}
	return l.Addr().String(), m, stop
}

// gRPC and HTTP/1 on one port: both answered, each by its own server, on connections opened
// at the same time.
func TestBothOnOnePort(t *testing.T) {
	addr, _, stop := serveMux(t, 5*time.Second)
	defer stop()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("gRPC health check: %v, %v", resp, err)
		}
		for _, method := range []string{"GET", "POST", "PUT"} {
			req, _ := http.NewRequest(method, "http://"+addr+"/metrics", strings.NewReader("x"))
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s /metrics: %v", method, err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if string(b) != "http" {
				t.Errorf("%s /metrics answered %q, want the HTTP server's", method, b)
			}
		}
	}
}

// A connection that sends nothing, or only the start of the preface, is closed once the sniff
// deadline passes, without holding up others.
func TestSilentConnectionClosed(t *testing.T) {
	const timeout = 200 * time.Millisecond
	addr, _, stop := serveMux(t, timeout)
	defer stop()
	for _, send := range []string{"", Preface[:10]} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		r, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("another client while one is silent: %v", err)
		}
		r.Body.Close()
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(make([]byte, 1))
		if n != 0 || err != io.EOF {
			t.Errorf("after sending %q: read %d bytes, %v; want the mux to close the connection", send, n, err)
		}
		if waited := time.Since(start); waited > timeout+time.Second {
			t.Errorf("after sending %q: closed after %v, deadline %v", send, waited, timeout)
		}
		c.Close()
	}
}

// Close ends connections being sniffed at once and leaves no goroutine behind.
func TestCloseEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	addr, m, stop := serveMux(t, time.Hour)
	var silent []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// Wait until the mux has accepted them all.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.mu.Lock()
		n := len(m.sniffing)
		m.mu.Unlock()
		if n == len(silent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections being sniffed, want %d", n, len(silent))
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	for _, c := range silent {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("a silent connection after Close: %v, want EOF", err)
		}
		c.Close()
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the port still accepts after Close")
	}
	deadline = time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
