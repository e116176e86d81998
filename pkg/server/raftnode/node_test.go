package raftnode_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

type nowhere struct{}

func (nowhere) Send([]*raftpb.Message)       {}
func (nowhere) SetPeers(*membership.Cluster) {}

// createA makes the data dir of member "a" of a new cluster of the members named (a first),
// each at its own made-up peer URL, and loads its state.
func createA(t *testing.T, names ...string) (store *storage.Store, st *storage.State, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "a")
	var initial []datadir.Initial
	for i, name := range names {
		initial = append(initial, datadir.Initial{Name: name, URLs: []string{fmt.Sprintf("http://127.0.0.1:%d", i+1)}})
	}
	store, err := datadir.Create(dir, "a", datadir.NewCluster(initial, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err = store.Load(); err != nil {
		store.Close()
		t.Fatal(err)
	}
	return store, st, dir
}

// startOne runs a one-member node on a fresh data dir; run reports what Run returned.
func startOne(t *testing.T, ctx context.Context, logs *servertest.LogBuffer) (node *raftnode.Node, store *storage.Store, dir string, run <-chan error) {
	t.Helper()
	store, st, dir := createA(t, "a")
	node, err := raftnode.New(raftnode.Config{
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
	var logs servertest.LogBuffer
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
	var logs servertest.LogBuffer
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

// A read waiting for the cluster on a member that learns it was removed is answered at once
// with ErrStopped, not at its deadline, and so is every read after it: the client moves on to
// another member.
func TestRemovalReleasesWaitingReads(t *testing.T) {
	// Two voters, one running: no leader ever, so a read waits for one.
	store, st, _ := createA(t, "a", "b")
	defer store.Close()
	node, err := raftnode.New(raftnode.Config{
		Store: store, State: st, Transport: nowhere{}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 1000, SnapshotCount: 10000, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	run := make(chan error, 1)
	go func() { run <- node.Run(context.Background()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const readers = 4
	errs := make(chan error, readers)
	for range readers {
		go func() { _, err := node.ReadIndex(ctx); errs <- err }()
	}
	time.Sleep(100 * time.Millisecond)
	removed := time.Now()
	node.MarkRemoved()
	for range readers {
		if err := <-errs; !errors.Is(err, raftnode.ErrStopped) {
			t.Errorf("waiting read: %v, want ErrStopped", err)
		}
	}
	// Generous for a loaded machine; without the release the reads wait for seconds.
	if d := time.Since(removed); d > time.Second {
		t.Errorf("waiting reads answered %v after the removal", d)
	}
	if _, err := node.ReadIndex(ctx); !errors.Is(err, raftnode.ErrStopped) {
		t.Errorf("read after the removal: %v, want ErrStopped", err)
	}
	if err := waitRun(t, run); !errors.Is(err, raftnode.ErrRemoved) {
		t.Fatalf("Run: %v, want ErrRemoved", err)
	}
}
