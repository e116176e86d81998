package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// options are the command line; the defaults are what `make bench` runs and what
// docs/benchmarks.md reports.
type options struct {
	warmup          int
	listRuns        int
	statusRuns      int
	only            string
	tlsRuns         int
	tls             bool
	rssRuns         int
	changeRuns      int
	confRuns        int
	historyConfRuns int
	urlRuns         int
	history         int
	fsyncRuns       int
	cycles          int
	historyCycles   int
	replaceRuns     int
	deadReplaceRuns int
	removals        int
	etcdRemovals    int
	entries         int
	snapshotCount   int
	idle            time.Duration
	fillTimeout     time.Duration
	timeout         time.Duration
	out             string
	parent          string
	keep            bool
	buildEtcd       bool
	logLevel        string
	build           bool
	profile         string
	profileFor      time.Duration
	historyEntries  int
	historyControl  bool
	pool            []string // -pool: the JSON reports to pool, the arguments after the flags
}

// The series -only runs alone: cluster status after the cluster starts, or the history phase on
// two clusters of its own.
const (
	onlyClusterStatus = "cluster-status"
	onlyReplace       = "replace"
	onlyHistory       = "history"
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.warmup, "warmup", 5, "unmeasured runs before each measured series: of member list, peak RSS and package init processes, "+
		"add+remove pairs of processes, in-process add+remove pairs and fsync and bbolt commits; the learner-ready and leader-removal "+
		"cycles get one unmeasured cycle unless this is 0, as each cycle takes about a second and leaves a removed member behind "+
		"(idle RSS is one reading of each member, not a series)")
	fs.IntVar(&o.listRuns, "list-runs", 200, "measured `member list` processes per CLI and of the floor")
	fs.IntVar(&o.statusRuns, "status-runs", 50, "measured rounds of cluster status: one clusterctl cluster status, etcdctl endpoint status --cluster + member list, one --all-contexts over 10 contexts and each of their single statuses")
	fs.StringVar(&o.only, "only", "", "run only this series: cluster-status or replace (after the cluster starts: replace is the replacements of the leader and of a dead follower), or history (the history phase, on two clusters of its own) (empty: every series)")
	fs.IntVar(&o.tlsRuns, "tls-runs", 100, "measured `member list` processes per program in the TLS phase (clusterctl and etcdctl over TLS, the floor over TLS and in plain text, clusterctl in plain text)")
	fs.BoolVar(&o.tls, "tls", true, "measure the TLS phase: a second cluster with TLS and client certificates on both ports, RSA 2048 keys")
	fs.IntVar(&o.rssRuns, "rss-runs", 20, "`member list` processes per CLI and of the floor whose peak RSS is read")
	fs.IntVar(&o.changeRuns, "change-runs", 50, "measured add+remove pairs of processes per CLI")
	fs.IntVar(&o.confRuns, "conf-runs", 100, "measured add+remove pairs in process (two changes each)")
	fs.IntVar(&o.historyConfRuns, "history-conf-runs", 100, "measured add+remove pairs in process per cluster in the history phase (the ratio of the two medians is reported; runs of one code gave ratios 0.05x apart: read it over runs, -pool)")
	fs.IntVar(&o.urlRuns, "url-runs", 50, "measured updates of a learner's peer URLs, with one URL and with the most a member may have, and dry-run adds of 3,000 URLs beside it")
	fs.IntVar(&o.history, "history", 2500, "learners added and removed before conf changes are measured again, so the cluster's history holds that many removed IDs; the history phase does the same in its two clusters")
	fs.IntVar(&o.historyEntries, "history-entries", 10000, "changes made in each of the history phase's two clusters, one keeping the default --max-history, one keeping one change: a fill of peer URL updates (at least 3x -snapshot-count), then the -history learners added and removed; 0 skips the phase")
	fs.IntVar(&o.fsyncRuns, "fsync-runs", 500, "measured appends of the fsync floor")
	fs.IntVar(&o.cycles, "cycles", 11, "learner-ready and leader-removal measurements (one of each per cycle); a learner waits up to a heartbeat interval (100 ms) for the leader's next heartbeat, spread at random over the interval, so fewer cycles leave the median to chance")
	fs.BoolVar(&o.historyControl, "history-control", false, "the history phase's second cluster keeps the default --max-history too: a run in which the two clusters differ in nothing, whose ratios show how far the comparison strays from 1x by chance")
	fs.IntVar(&o.historyCycles, "history-cycles", 11, "learner-ready and leader-removal cycles per cluster in the history phase (the ratios of the two medians are reported; with two clusters alike, -history-control, a run's ratios of 31 cycles strayed to 1.24x: read them over runs, -pool)")
	fs.IntVar(&o.replaceRuns, "replace-runs", 20, "measured replacements of the leader per CLI: clusterctl member replace and the same steps as etcdctl commands (one unmeasured each first unless -warmup=0)")
	fs.IntVar(&o.deadReplaceRuns, "dead-replace-runs", 15, "measured replacements of a dead follower (killed just before) per CLI: clusterctl member replace and etcdctl's remove, add, promote steps (one unmeasured each first unless -warmup=0); each new member waits up to a heartbeat interval for its first heartbeat, spread at random over the interval, so fewer runs leave the ratio to chance")
	fs.IntVar(&o.removals, "removals", 20, "measured leader removals seen by etcd's clientv3 (one unmeasured first unless -warmup=0; each adds a member back)")
	fs.IntVar(&o.etcdRemovals, "etcd-removals", 0, "leader removals seen by clientv3 on a real etcd 3.7.1 cluster, for comparison (0: none; needs etcd built, see -build-etcd; each takes seconds, as etcd's gap is over a second)")
	fs.IntVar(&o.entries, "entries", 10000, "raft log entries the cluster holds before the first learner starts")
	fs.IntVar(&o.snapshotCount, "snapshot-count", 1000, "--snapshot-count of every member")
	fs.DurationVar(&o.idle, "idle", 10*time.Second, "idle time before the members' RSS is read")
	fs.DurationVar(&o.fillTimeout, "fill-timeout", 100*time.Second, "bound on filling the log")
	fs.DurationVar(&o.timeout, "timeout", 600*time.Second, "bound on the whole run, build included (make bench passes what is left of BENCH_TIMEOUT)")
	fs.StringVar(&o.out, "out", "bench-results/latest.json", "where the JSON results go; a relative path is taken from the module root")
	fs.StringVar(&o.parent, "dir", "", "parent of the temporary data directory (default .cache/ in the module root; must not be tmpfs)")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directory and member logs")
	fs.BoolVar(&o.buildEtcd, "build-etcd", false, "build etcdctl 3.7.1 with scripts/build-etcd.sh if it is not built yet (minutes)")
	fs.BoolVar(&o.build, "build", true, "build bin/clusterd and bin/clusterctl first (false: use them as they are)")
	fs.StringVar(&o.profile, "profile", "", "`dir` to write the leader's CPU profile and execution traces of the leader and a follower to, taken during extra conf changes after the measured ones, with a summary of them (empty: no profiling; members then serve no profiles)")
	fs.DurationVar(&o.profileFor, "profile-for", 5*time.Second, "how long the profiled conf changes run")
	pool := fs.Bool("pool", false, "measure nothing: read the JSON reports given as arguments (runs of this bench) and print each ratio row's geometric mean over them with a 90% interval, met when the interval's upper end is within the row's target")
	fs.StringVar(&o.logLevel, "log-level", "warn", "--log-level of every member (their logs are kept with -keep)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *pool {
		if fs.NArg() == 0 {
			return o, errors.New("-pool needs the JSON reports of the runs to pool as arguments")
		}
		o.pool = fs.Args()
		return o, nil
	}
	if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.only != "" && o.only != onlyClusterStatus && o.only != onlyReplace && o.only != onlyHistory {
		return o, fmt.Errorf("-only=%s: the series that run alone are %s, %s and %s", o.only, onlyClusterStatus, onlyReplace, onlyHistory)
	}
	for name, v := range map[string]int{"list-runs": o.listRuns, "status-runs": o.statusRuns, "tls-runs": o.tlsRuns, "rss-runs": o.rssRuns, "change-runs": o.changeRuns,
		"conf-runs": o.confRuns, "url-runs": o.urlRuns, "history": o.history, "fsync-runs": o.fsyncRuns, "cycles": o.cycles, "history-cycles": o.historyCycles, "history-conf-runs": o.historyConfRuns, "replace-runs": o.replaceRuns, "dead-replace-runs": o.deadReplaceRuns, "removals": o.removals, "entries": o.entries} {
		if v < 1 {
			return o, fmt.Errorf("-%s must be at least 1", name)
		}
	}
	if o.historyEntries < 0 {
		return o, errors.New("-history-entries must not be negative")
	}
	if o.only == onlyHistory && o.historyEntries == 0 {
		return o, errors.New("-only=history needs -history-entries above 0")
	}
	if o.etcdRemovals < 0 {
		return o, errors.New("-etcd-removals must not be negative")
	}
	if o.warmup < 0 {
		return o, errors.New("-warmup must not be negative")
	}
	return o, nil
}

// cycleWarmup is the number of unmeasured learner-ready and leader-removal cycles: one, so the
// first measured cycle is not the first time the members catch a new member up with the filled
// log and hand leadership over, unless -warmup=0. Not -warmup of them: each cycle takes about a
// second and leaves a removed member behind.
func (o options) cycleWarmup() int { return min(o.warmup, 1) }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if opt.pool != nil {
		pooled, err := poolReports(opt.pool)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		printPooled(stdout, pooled)
		return 0
	}
	// SIGINT and SIGTERM cancel the run; the deferred cleanup then stops every process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, opt.timeout, fmt.Errorf("the run took longer than -timeout=%v", opt.timeout))
	defer cancel()
	b := &bench{opt: opt, log: stderr}
	err = b.run(ctx)
	b.cleanup()
	if err != nil && ctx.Err() != nil {
		// The step that was cut short says only what it saw: a deadline, or no answer.
		err = fmt.Errorf("%v (%w)", context.Cause(ctx), err)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	b.rep.printTable(stdout)
	out := opt.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(b.root, out)
	}
	if err := b.rep.writeJSON(out); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nJSON: %s\n", opt.out)
	return 0
}

// bench is one run: what it built, what it started, what it measured.
type bench struct {
	opt  options
	log  io.Writer
	root string // module root
	dir  string // temporary directory for data dirs, logs, the floor and peakrss

	clusterd, clusterctl, floor, gostart, peakrss, etcdctl string
	etcdBin                                                string // etcd 3.7.1, when built

	etcdC *cluster.Cluster // the real etcd cluster, while -etcd-removals run

	c   *cluster.Cluster
	r   *runner
	rep *report
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// cleanup stops every member and removes the temporary directory unless -keep was given. It is
// called on every path out of run.
func (b *bench) cleanup() {
	for _, c := range []*cluster.Cluster{b.c, b.etcdC} {
		if c == nil {
			continue
		}
		if err := c.StopAll(5 * time.Second); err != nil {
			b.logf("stopping the members: %v", err)
		}
	}
	if b.r != nil {
		b.r.close()
	}
	if b.dir != "" {
		if b.opt.keep {
			b.logf("kept %s", b.dir)
		} else if err := os.RemoveAll(b.dir); err != nil {
			b.logf("removing %s: %v", b.dir, err)
		}
	}
}

func (b *bench) run(ctx context.Context) error {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	b.root = root
	parent := b.opt.parent
	if parent == "" {
		parent = filepath.Join(root, ".cache")
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	b.dir, err = os.MkdirTemp(parent, "bench-")
	if err != nil {
		return err
	}
	fsType, err := checkDisk(b.dir)
	if err != nil {
		return err
	}
	b.rep = newReport(b.opt, b.dir, fsType)
	if err := b.build(ctx); err != nil {
		return err
	}
	b.r, err = newRunner(b.dir)
	if err != nil {
		return err
	}
	b.c = b.newCluster(ctx)
	return b.measure(ctx)
}

// build builds the two binaries where `make build` puts them, and the floors and peakrss into
// the temporary directory; etcdctl is used when scripts/build-etcd.sh has built it (or -build-etcd asks for it).
func (b *bench) build(ctx context.Context) error {
	b.clusterd = filepath.Join(b.root, "bin", "clusterd")
	b.clusterctl = filepath.Join(b.root, "bin", "clusterctl")
	b.floor = filepath.Join(b.dir, "floor")
	b.peakrss = filepath.Join(b.dir, "peakrss")
	b.gostart = filepath.Join(b.dir, "gostart")
	// What `make build` does (see BUILD in the Makefile): the floors are built like the programs
	// they are the floors of.
	if err := (cluster.Build{Dir: b.dir, Release: true, Logf: b.logf,
		Packages: []string{"./tests/bench/floor", "./tests/bench/gostart", "./tests/bench/peakrss"}}).Run(ctx); err != nil {
		return err
	}
	if b.opt.build {
		if err := (cluster.Build{Dir: filepath.Join(b.root, "bin"), Release: true, Logf: b.logf}).Run(ctx); err != nil {
			return err
		}
	} else {
		b.rep.note("bin/clusterd and bin/clusterctl were used as found (-build=false)")
	}
	cached := filepath.Join(b.root, ".cache", "etcd-v3.7.1", "etcdctl")
	if _, err := os.Stat(cached); err != nil && !b.opt.buildEtcd {
		b.rep.note("etcdctl 3.7.1 is not built (run scripts/build-etcd.sh once, or pass -build-etcd): no etcdctl column")
		return nil
	}
	// The script verifies the cached binaries' version and builds only when they are missing.
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(b.root, "scripts", "build-etcd.sh"))
	cmd.Dir = b.root
	cmd.Stderr = b.log
	out, err := cmd.Output()
	lines := strings.Fields(string(out))
	if err != nil || len(lines) != 2 {
		b.rep.note(fmt.Sprintf("scripts/build-etcd.sh failed (%v): no etcdctl column", err))
		return nil
	}
	b.etcdBin, b.etcdctl = lines[0], lines[1]
	return nil
}

// tmpfsMagic is TMPFS_MAGIC from linux/magic.h; ramfs has its own.
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// checkDisk refuses a directory in memory, where fdatasync is free, and returns the file system
// type for the report.
func checkDisk(dir string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	return diskKind(dir, int64(st.Type))
}

// diskKind names the file system of statfs type magic, refusing the in-memory ones.
func diskKind(dir string, magic int64) (string, error) {
	switch magic {
	case tmpfsMagic, ramfsMagic:
		return "", fmt.Errorf("%s is in memory (tmpfs/ramfs): fsync costs nothing there; pass -dir with a directory on disk", dir)
	case 0xef53:
		return "ext4", nil
	case 0x58465342:
		return "xfs", nil
	case 0x9123683e:
		return "btrfs", nil
	}
	return fmt.Sprintf("statfs type %#x", magic), nil
}
