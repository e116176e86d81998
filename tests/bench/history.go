package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// historySizes is what a membership history takes: in the leader's member.db, in a snapshot
// file (`snapshot save`), and in the raft snapshot a joining member receives.
type historySizes struct {
	Events int `json:"events"`
	// DBBytes is the leader's member.db as its status reports it: bbolt's pages, free ones
	// included.
	DBBytes int64 `json:"db_bytes"`
	// SnapshotFileBytes is what `snapshot save` writes.
	SnapshotFileBytes int64 `json:"snapshot_file_bytes"`
	// RaftSnapshotBytes is the data of the raft snapshot sent to a joining member: the whole
	// membership (storage.SnapshotData); HistoryBytes is the history's part of it.
	RaftSnapshotBytes int64 `json:"raft_snapshot_bytes"`
	HistoryBytes      int64 `json:"history_bytes"`
}

// historySizePair is the sizes of the history phase's two clusters, for the JSON.
type historySizePair struct {
	Short historySizes `json:"short"`
	Full  historySizes `json:"full"`
}

// historyFigures compare a cluster whose membership history holds -history-entries changes
// (true) with one whose members keep one change (false, --max-history=1; with -history-control
// the default too), in the same run.
type historyFigures struct {
	conf  map[bool]samples
	ready map[bool]samples // learner ready
	gaps  map[bool]samples // leader removal, longest gap
	sizes map[bool]historySizes
}

// historyPhase compares, in turn so both see the same machine, conf changes, learners made
// ready and leaders removed on a cluster whose history is full and on one whose members keep
// one change (--max-history=1), and reads the sizes. The phase starts both clusters and makes
// the same changes in each, at the same time: a fill of peer URL updates, then -history learners
// added and removed, -history-entries changes in all (at least 3x --snapshot-count of fill, so
// that members snapshot and compact their logs and a new member is sent a snapshot). The two
// then differ in what --max-history keeps alone: their members are as old, have applied as
// many entries and hold as many removed IDs. (The bench's main cluster is not one of them: by
// this phase its members have served every earlier phase for minutes, and a comparison of it
// with a new cluster measured that age as well as the history.) The clusters are stopped again.
func (b *bench) historyPhase(ctx context.Context) (*historyFigures, error) {
	clusters := map[bool]*cluster.Cluster{}
	f := &historyFigures{sizes: map[bool]historySizes{}, ready: map[bool]samples{}, gaps: map[bool]samples{}}
	for _, full := range []bool{false, true} {
		name := "history-" + historyKind(full)
		dir := filepath.Join(b.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		args := []string{fmt.Sprintf("--snapshot-count=%d", b.opt.snapshotCount), "--log-level=" + b.opt.logLevel}
		if !full && !b.opt.historyControl {
			args = append(args, "--max-history=1")
		}
		c := cluster.New(cluster.Config{
			Server: b.clusterd, Dir: dir, Token: "bench-" + name, Context: ctx,
			Env: []string{"PATH=" + os.Getenv("PATH")}, Args: args,
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
	}
	fill := max(b.opt.historyEntries-2*b.opt.history, 3*b.opt.snapshotCount)
	b.logf("history phase: in each cluster at once, %d changes, then %d learners added and removed", fill, b.opt.history)
	errs := make(chan error, len(clusters))
	for _, c := range clusters {
		go func() { errs <- fillHistoryOf(ctx, c, fill, b.opt.history, b.opt.fillTimeout) }()
	}
	var err error
	for range clusters {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return nil, err
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
	b.logf("history phase: conf changes in process, %d pairs (+%d warm-up) per cluster", b.opt.historyConfRuns, b.opt.warmup)
	if f.conf, err = b.inTurn(ctx, "history", clients, map[bool]string{false: peer, true: peer}, b.opt.historyConfRuns); err != nil {
		return nil, err
	}
	for full, c := range clusters {
		if f.sizes[full], err = b.historySizes(ctx, c, clients[full], historyKind(full)); err != nil {
			return nil, err
		}
	}
	if err := b.historyCycles(ctx, clusters, f); err != nil {
		return nil, err
	}
	return f, nil
}

// fillHistoryOf makes as many peer URL updates in c as changes says (one event each), then adds
// and removes as many learners as pairs says, as the main cluster does after its fill: the
// history then holds learners added and removed, and the membership their removed IDs.
func fillHistoryOf(ctx context.Context, c *cluster.Cluster, changes, pairs int, timeout time.Duration) error {
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return err
	}
	st, err := cluster.Status(ms[0])
	if err != nil {
		return err
	}
	if _, err := fillLogIn(ctx, c, st.GetRaftIndex()+uint64(changes), timeout); err != nil {
		return err
	}
	_, err = addRemoveLoopIn(ctx, c, viaLeader, pairs, time.Time{})
	return err
}

// historyKind names the history phase's clusters: the one whose history is full, the other.
func historyKind(full bool) string {
	if full {
		return "full"
	}
	return "short"
}

// historyCycles makes a learner ready and removes the leader on each cluster in turn, the order
// alternating, -cycles times after the warm-up cycle: the learners of the full cluster receive
// its whole history in their first snapshot.
func (b *bench) historyCycles(ctx context.Context, clusters map[bool]*cluster.Cluster, f *historyFigures) error {
	warm := b.opt.cycleWarmup()
	b.logf("history phase: learner ready and leader removal, %d cycles (+%d warm-up) per cluster", b.opt.historyCycles, warm)
	for k := range warm + b.opt.historyCycles {
		for j := range 2 {
			full := (k+j)%2 == 1
			v, err := b.learnerReadyIn(ctx, clusters[full], fmt.Sprintf("hlearner%d", k))
			if err != nil {
				return fmt.Errorf("history phase, full %v: %w", full, err)
			}
			rr, err := b.leaderRemovalIn(ctx, clusters[full])
			if err != nil {
				return fmt.Errorf("history phase, full %v: %w", full, err)
			}
			b.logf("history phase, %s cycle %d: learner ready %.1f ms; leader removal gap %.1f ms from %+.1f ms, remove took %.1f ms, %s leads",
				historyKind(full), k+1-warm, v.ReadyMS, rr.LongestGapMS, rr.GapFromMS, rr.RemoveMS, rr.NewLeader)
			if k >= warm {
				f.ready[full] = append(f.ready[full], v.ReadyMS)
				f.gaps[full] = append(f.gaps[full], rr.LongestGapMS)
			}
		}
	}
	return nil
}

// historySizes reads the sizes of c's history: its leader's member.db, and a snapshot saved
// through cl.
func (b *bench) historySizes(ctx context.Context, c *cluster.Cluster, cl *client.Client, name string) (historySizes, error) {
	var hs historySizes
	ms, _, err := leaderFirstOf(c)
	if err != nil {
		return hs, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st := cl.StatusOfEach(cctx, []string{ms[0].ClientURL()}, 5*time.Second)[0]
	if st.Err != nil {
		return hs, st.Err
	}
	hs.DBBytes = st.Status.DBSize
	path := filepath.Join(b.dir, "history-"+name+".db")
	if _, err := cl.SaveSnapshot(cctx, path); err != nil {
		return hs, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return hs, err
	}
	hs.SnapshotFileBytes = fi.Size()
	st2, err := datadir.ReadStatus(path)
	if err != nil {
		return hs, err
	}
	info := st2.Clusterd
	if info == nil {
		return hs, fmt.Errorf("%s: not a clusterd snapshot", path)
	}
	data, err := storage.SnapshotData(info.Cluster)
	if err != nil {
		return hs, err
	}
	bare, err := storage.SnapshotData(info.Cluster.WithoutHistory())
	if err != nil {
		return hs, err
	}
	hs.HistoryBytes = int64(len(data) - len(bare))
	hs.Events, hs.RaftSnapshotBytes = info.Cluster.History.Len(), int64(len(data))
	return hs, nil
}

// fillHistory adds the history phase's rows: a conf change, learner ready and leader removal
// with a full history against the same with a history of one change, reported with their ratios,
// and the sizes.
func (r *report) fillHistory(f *historyFigures) {
	if f == nil {
		return
	}
	w := r.Options["warmup"].(int)
	cw := min(w, 1)
	short, full := f.sizes[false], f.sizes[true]
	second := "--max-history=1"
	if control, _ := r.Options["history_control"].(bool); control {
		second = "the default --max-history too (-history-control)"
	}
	pair := func(key, what, unit string, s map[bool]samples, warmup int) {
		x := stat(key+"_full_history", fmt.Sprintf("history: %s, %d changes in the membership history", what, full.Events), unit, s[true], warmup, "report")
		y := stat(key+"_short_history", fmt.Sprintf("history: %s, %s, in turn with the above", what, second), unit, s[false], warmup, "report")
		if len(s[true]) > 0 && len(s[false]) > 0 {
			x.Ratio, x.RatioTo = ptr(x.Median/y.Median), y.Key
		}
		r.Rows = append(r.Rows, x, y)
	}
	pair("conf_change", "one conf change (pkg/client, leader first)", "ms", f.conf, 2*w)
	pair("learner_ready", "learner ready, process start to promote", "ms", f.ready, cw)
	pair("leader_removal_gap", "leader removal, longest time without a successful list", "ms", f.gaps, cw)
	kib := func(key, figure string, full, short int64) row {
		x := row{Key: key, Figure: figure, Unit: "KiB", Runs: 1, Target: "report", Median: float64(full) / 1024}
		x.P99, x.Max = x.Median, x.Median
		if short > 0 {
			x.Ratio, x.RatioTo = ptr(float64(full)/float64(short)), key+" with "+second
		}
		return x
	}
	r.Rows = append(r.Rows,
		kib("history_db_size", fmt.Sprintf("history: the leader's member.db with %d changes in the history", full.Events), full.DBBytes, short.DBBytes),
		kib("history_snapshot_file_size", fmt.Sprintf("history: snapshot save file with %d changes in the history", full.Events), full.SnapshotFileBytes, short.SnapshotFileBytes),
		kib("history_raft_snapshot_size", fmt.Sprintf("history: raft snapshot data (sent to a joining member) with %d changes in the history", full.Events), full.RaftSnapshotBytes, short.RaftSnapshotBytes),
		kib("history_size", fmt.Sprintf("history: the history's part of that snapshot, %d changes", full.Events), full.HistoryBytes, 0))
	r.History = &historySizePair{Short: short, Full: full}
}
