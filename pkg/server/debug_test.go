package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
)

func get(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// wantGet waits until url answers code with body (any body when body is empty).
func wantGet(t *testing.T, url string, code int, body string) {
	t.Helper()
	servertest.Eventually(t, 10*time.Second, func() error {
		c, b, err := get(url)
		if err != nil {
			return err
		}
		if c != code || body != "" && b != body {
			return errors.New(url + ": " + http.StatusText(c) + " " + b)
		}
		return nil
	})
}

// wantHealth waits until the member's standard gRPC health service, on its client URL, reports
// want for the whole server (service "").
func wantHealth(t *testing.T, m *servertest.Member, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	servertest.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		if r.GetStatus() != want {
			return errors.New(m.Name + ": " + r.GetStatus().String())
		}
		return nil
	})
}

// The health of a member, served two ways: etcd's /health on the metrics URLs, and the standard
// gRPC health service on the client URLs; both say whether the member knows a leader.
func TestMetricsURLs(t *testing.T) {
	metrics := map[string]string{}
	ms := servertest.Start(t, 2, func(c *server.Config) {
		u := "http://" + servertest.FreeAddr(t)
		metrics[c.Name] = u
		c.ListenMetricsURLs, c.EnablePprof = []string{u}, c.Name == "m0"
	})
	for _, m := range ms {
		wantGet(t, metrics[m.Name]+"/health", http.StatusOK, "{\"health\":\"true\",\"reason\":\"\"}\n")
		wantHealth(t, m, healthpb.HealthCheckResponse_SERVING)
	}
	wantGet(t, metrics["m0"]+"/debug/pprof/cmdline", http.StatusOK, "")
	wantGet(t, metrics["m1"]+"/debug/pprof/cmdline", http.StatusNotFound, "")
	// Never on the client URLs, where /health is served too.
	wantGet(t, ms[0].ClientURL+"/health", http.StatusOK, "{\"health\":\"true\",\"reason\":\"\"}\n")
	wantGet(t, ms[0].ClientURL+"/debug/pprof/cmdline", http.StatusNotFound, "")

	// The other of two voters gone: no leader, and /health says so the way etcd's does.
	if err := ms[1].Stop(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, metrics["m0"]+"/health", http.StatusServiceUnavailable, "{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}\n")
	wantHealth(t, ms[0], healthpb.HealthCheckResponse_NOT_SERVING)
}
