package raftnode_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

type nowhere struct{}

func (nowhere) Send([]*raftpb.Message)       {}
func (nowhere) SetPeers(*membership.Cluster) {}

// syncBuffer is a log sink the node and the test may touch at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startOne runs a one-member node on a fresh data dir; run reports what Run returned.
func startOne(t *testing.T, ctx context.Context, logs *syncBuffer) (node *raftnode.Node, store *storage.Store, dir string, run <-chan error) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "a")
	c := datadir.NewCluster([]datadir.Initial{{Name: "a", URLs: []string{"http://127.0.0.1:1"}}}, "test")
	store, err := datadir.Create(dir, "a", c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	node, err = raftnode.New(raftnode.Config{
		Store: store, State: st, Transport: nowhere{}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, SnapshotCount: 10000, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	return node, store, dir, done
}

func waitRun(t *testing.T, run <-chan error) error {
	t.Helper()
	select {
	case err := <-run:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
		return nil
	}
}

// A peer's report of this member's removal stops Run, which writes the tombstone first.
func TestMarkRemovedWritesTombstone(t *testing.T) {
	var logs syncBuffer
	node, store, dir, run := startOne(t, context.Background(), &logs)
	node.MarkRemoved()
	node.MarkRemoved()
	if err := waitRun(t, run); !errors.Is(err, raftnode.ErrRemoved) {
		t.Fatalf("Run: %v, want ErrRemoved", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	st, err := again.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Removed {
		t.Fatal("no tombstone after MarkRemoved")
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("errors logged:\n%s", logs.String())
	}
}

// Peers go on reporting the removal while the member shuts down, after its store is closed:
// that must neither touch the store nor print anything after the member's last line.
func TestMarkRemovedAfterStop(t *testing.T) {
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	node, store, _, run := startOne(t, ctx, &logs)
	cancel()
	if err := waitRun(t, run); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	before := logs.String()
	for range 3 {
		node.MarkRemoved()
	}
	if after := logs.String(); after != before {
		t.Fatalf("logged after the store was closed:\n%s", after[len(before):])
	}
}
