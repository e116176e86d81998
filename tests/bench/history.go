package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/freeport"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// historySizes is what a membership history takes: in the leader's member.db, in a snapshot
// file (`snapshot save`), and in the raft snapshot a joining member receives.
type historySizes struct {
	Events int `json:"events"`
	// DBBytes is the leader's member.db, bbolt's free pages included.
	DBBytes int64 `json:"db_bytes"`
	// SnapshotFileBytes is what `snapshot save` writes.
	SnapshotFileBytes int64 `json:"snapshot_file_bytes"`
	// RaftSnapshotBytes is the data of the raft snapshot sent to a joining member: the whole
	// membership as JSON; HistoryBytes is the history's part of it.
	RaftSnapshotBytes int64 `json:"raft_snapshot_bytes"`
	HistoryBytes      int64 `json:"history_bytes"`
}

// historySizePair is the sizes of the history phase's two clusters, for the JSON.
type historySizePair struct {
	Fresh historySizes `json:"fresh"`
	Full  historySizes `json:"full"`
}

// historyFigures compare a cluster whose membership history holds -history-entries changes
// (true) with a fresh one whose history is nearly empty (false).
type historyFigures struct {
	conf  map[bool]samples
	sizes map[bool]historySizes
	fill  fillResult
}

// historyPhase compares conf changes on a cluster whose history is full with a fresh one, in
// turn so both see the same machine, and reads the sizes. filled is the cluster with the full
// history, b.c after the log is filled and the -history pairs made (its history is then at the
// default bound); when it is nil (-only=history), a second cluster is started and its history
// filled with -history-entries changes (peer URL updates, one event each). The clusters the
// phase starts are stopped again.
func (b *bench) historyPhase(ctx context.Context, filled *cluster.Cluster) (*historyFigures, error) {
	clusters := map[bool]*cluster.Cluster{true: filled}
	f := &historyFigures{sizes: map[bool]historySizes{}}
	for _, full := range []bool{false, true} {
		if clusters[full] != nil {
			continue
		}
		name := map[bool]string{false: "history-none", true: "history-full"}[full]
		dir := filepath.Join(b.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		c := cluster.New(cluster.Config{
			Server: b.clusterd, Dir: dir, Token: "bench-" + name, Context: ctx,
			Env:  []string{"PATH=" + os.Getenv("PATH")},
			Args: []string{fmt.Sprintf("--snapshot-count=%d", b.opt.snapshotCount), "--log-level=" + b.opt.logLevel},
		})
		defer func() {
			if err := c.StopAll(5 * time.Second); err != nil {
				b.logf("stopping the %s members: %v", name, err)
			}
		}()
		if _, err := c.Bootstrap(3, nil); err != nil {
			return nil, err
		}
		if err := waitReadyOf(ctx, c, nil); err != nil {
			return nil, err
		}
		clusters[full] = c
		if !full {
			continue
		}
		ms, _, err := leaderFirstOf(c)
		if err != nil {
			return nil, err
		}
		st, err := cluster.Status(ms[0])
		if err != nil {
			return nil, err
		}
		b.logf("history phase: filling a cluster's history with %d changes", b.opt.historyEntries)
		if f.fill, err = fillLogIn(ctx, c, st.GetRaftIndex()+uint64(b.opt.historyEntries), b.opt.fillTimeout); err != nil {
			return nil, err
		}
	}
	clients := map[bool]*client.Client{}
	for full, c := range clusters {
		ms, _, err := leaderFirstOf(c)
		if err != nil {
			return nil, err
		}
		cl, err := newClient(ms)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		clients[full] = cl
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	b.logf("history phase: conf changes in process, %d pairs (+%d warm-up) per cluster", b.opt.confRuns, b.opt.warmup)
	if f.conf, err = b.inTurn(ctx, "history", clients, map[bool]string{false: peer, true: peer}); err != nil {
		return nil, err
	}
	for full, c := range clusters {
		if f.sizes[full], err = b.historySizes(ctx, c, clients[full], map[bool]string{false: "none", true: "full"}[full]); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// historySizes reads the sizes of c's history: its leader's member.db, and a snapshot saved
// through cl.
func (b *bench) historySizes(ctx context.Context, c *cluster.Cluster, cl *client.Client, name string) (historySizes, error) {
	var hs historySizes
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return hs, err
	}
	fi, err := os.Stat(filepath.Join(ms[0].DataDir, storage.FileName))
	if err != nil {
		return hs, err
	}
	hs.DBBytes = fi.Size()
	path := filepath.Join(b.dir, "history-"+name+".db")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := cl.SaveSnapshot(cctx, path); err != nil {
		return hs, err
	}
	if fi, err = os.Stat(path); err != nil {
		return hs, err
	}
	hs.SnapshotFileBytes = fi.Size()
	info, err := datadir.ReadSnapshot(path)
	if err != nil {
		return hs, err
	}
	data, err := storage.SnapshotData(info.Cluster)
	if err != nil {
		return hs, err
	}
	h, err := json.Marshal(info.Cluster.History)
	if err != nil {
		return hs, err
	}
	hs.Events, hs.RaftSnapshotBytes, hs.HistoryBytes = info.Cluster.History.Len(), int64(len(data)), int64(len(h))
	return hs, nil
}

// fillHistory adds the history phase's rows: a conf change with a full history against one with
// a nearly empty one (target: within 1.1x), and the sizes.
func (r *report) fillHistory(f *historyFigures) {
	if f == nil {
		return
	}
	w := r.Options["warmup"].(int)
	none, full := f.sizes[false], f.sizes[true]
	cf := stat("conf_change_full_history", fmt.Sprintf("history: one conf change, %d changes in the membership history (pkg/client, leader first)", full.Events), "ms", f.conf[true], 2*w, "<= 1.1x")
	cn := stat("conf_change_empty_history", fmt.Sprintf("history: one conf change, a fresh cluster (%d changes in its history), in turn with the above", none.Events), "ms", f.conf[false], 2*w, "report")
	cf.Ratio, cf.RatioTo = ptr(cf.Median/cn.Median), "conf_change_empty_history"
	cf.Met = ptr(*cf.Ratio <= 1.1)
	r.Rows = append(r.Rows, cf, cn)
	kib := func(key, figure string, full, none int64) row {
		x := row{Key: key, Figure: figure, Unit: "KiB", Runs: 1, Target: "report", Median: float64(full) / 1024}
		x.P99, x.Max = x.Median, x.Median
		if none > 0 {
			x.Ratio, x.RatioTo = ptr(float64(full)/float64(none)), key+" of the fresh cluster"
		}
		return x
	}
	r.Rows = append(r.Rows,
		kib("history_db_size", fmt.Sprintf("history: the leader's member.db with %d changes in the history", full.Events), full.DBBytes, none.DBBytes),
		kib("history_snapshot_file_size", fmt.Sprintf("history: snapshot save file with %d changes in the history", full.Events), full.SnapshotFileBytes, none.SnapshotFileBytes),
		kib("history_raft_snapshot_size", fmt.Sprintf("history: raft snapshot data (sent to a joining member) with %d changes in the history", full.Events), full.RaftSnapshotBytes, none.RaftSnapshotBytes),
		kib("history_json_size", fmt.Sprintf("history: the history's part of that snapshot, %d changes", full.Events), full.HistoryBytes, 0))
	r.History = &historySizePair{Fresh: none, Full: full}
}
