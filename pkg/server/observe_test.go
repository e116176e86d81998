package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/sdnotify"
)

// /metrics is served beside what the metrics port already serves, which keeps every other path.
func TestWithMetrics(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "next") })
	srv := httptest.NewServer(withMetrics(next, metrics.New(metrics.Options{})))
	defer srv.Close()
	for path, want := range map[string]string{
		"/metrics": "# TYPE etcd_server_has_leader gauge",
		"/health":  "next",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %s, body without %q", path, resp.Status, want)
		}
	}
}

// READY=1 reaches the notify socket only once the member's own publish is applied, and
// STOPPING=1 after it.
func TestReadyOnlyOnceJoined(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A socket path must fit in 108 bytes, which t.TempDir() may not.
	sockDir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	states := make(chan string, 4)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			states <- string(buf[:n])
		}
	}()

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := startNode(t, ctx, log)
	readied := make(chan struct{}, 2)
	notify := sdnotify.New(sock)
	go readyWhenJoined(ctx, node, notify, func() { readied <- struct{}{} }, log)
	select {
	case s := <-states:
		t.Fatalf("%q before the member's publish was applied", s)
	case <-readied:
		t.Fatal("OnReady called before the member's publish was applied")
	case <-time.After(300 * time.Millisecond):
	}

	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	term, err := node.LeaderTerm(wctx)
	for err != nil && wctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		term, err = node.LeaderTerm(wctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	self := membership.Member{ID: node.ID(), Name: "a", ClientURLs: []string{"http://127.0.0.1:2"}}
	if _, err := node.Propose(wctx, term, membership.Change{Kind: membership.KindPublish, Member: self}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"READY=1", "STOPPING=1"} {
		select {
		case s := <-states:
			if s != want {
				t.Fatalf("got %q, want %q", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s within 5s", want)
		}
		if want == "READY=1" {
			// Called once, before systemd is told.
			if len(readied) != 1 {
				t.Fatalf("OnReady called %d times by READY=1, want once", len(readied))
			}
			if err := notify.Stopping(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// startNode runs a one-member raft node on a fresh data dir until ctx ends.
func startNode(t *testing.T, ctx context.Context, log *slog.Logger) *raftnode.Node {
	t.Helper()
	c := datadir.NewCluster([]datadir.Initial{{Name: "a", URLs: []string{"http://127.0.0.1:1"}}}, "test")
	store, err := datadir.Create(filepath.Join(t.TempDir(), "a"), "a", c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	node, err := raftnode.New(raftnode.Config{
		Store: store, State: st, Transport: noPeers{}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, SnapshotCount: 10000, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = node.Run(ctx); close(done) }()
	t.Cleanup(func() { <-done; store.Close() })
	return node
}

type noPeers struct{}

func (noPeers) Send([]*raftpb.Message)       {}
func (noPeers) SetPeers(*membership.Cluster) {}
