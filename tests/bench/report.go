package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// row is one figure of the table and of the JSON. Field names are what scripts comparing runs
// read: never rename them.
type row struct {
	Key     string   `json:"key"`
	Figure  string   `json:"figure"`
	Unit    string   `json:"unit"`
	Runs    int      `json:"runs"`
	Warmup  int      `json:"warmup"`
	Median  float64  `json:"median"`
	P99     float64  `json:"p99"`
	Max     float64  `json:"max"`
	Target  string   `json:"target"`
	Ratio   *float64 `json:"ratio,omitempty"`
	RatioTo string   `json:"ratio_to,omitempty"`
	Met     *bool    `json:"met,omitempty"`
}

type machine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	GoVersion  string `json:"go_version"`
	FileSystem string `json:"file_system"`
	Device     string `json:"device"`
	// The load averages before and after the run: other work on the machine shows up in every
	// figure, so a run is only comparable with another run on an equally quiet machine.
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
}

type report struct {
	Time         string          `json:"time"`
	Machine      machine         `json:"machine"`
	Options      map[string]any  `json:"options"`
	Rows         []row           `json:"rows"`
	Learners     []learnerResult `json:"learners,omitempty"`
	Removals     []removalResult `json:"leader_removals,omitempty"`
	Replacements []replaceResult `json:"replacements,omitempty"`
	// DeadReplacements are the replacements of a dead follower: steps_ms are remove, add,
	// promote.
	DeadReplacements []replaceResult `json:"dead_replacements,omitempty"`
	// V3Removals are the leader removals seen by etcd's clientv3 (issue 14).
	V3Removals []removalResult `json:"leader_removals_clientv3,omitempty"`
	// EtcdV3Removals are the same on a real etcd cluster.
	EtcdV3Removals []removalResult `json:"etcd_leader_removals_clientv3,omitempty"`
	Fill           *fillResult     `json:"log_fill,omitempty"`
	// History is the sizes of the history phase's two clusters.
	History *historySizePair `json:"history_sizes,omitempty"`
	Notes   []string         `json:"notes"`
}

func newReport(o options, dir, fsType string) *report {
	return &report{
		Time: time.Now().UTC().Format(time.RFC3339),
		Machine: machine{
			CPUs:       runtime.NumCPU(),
			CPUModel:   cpuModel(),
			Kernel:     strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
			GoVersion:  runtime.Version(),
			FileSystem: fsType,
			Device:     device(dir),
			LoadBefore: loadavg(),
		},
		// Every option that shapes a figure, named after its flag. Left out: -out, -keep,
		// -timeout and -fill-timeout (where the results go, and bounds that end a run rather than
		// change its figures), -build-etcd and -build (the notes say whether etcdctl was there and
		// whether the binaries were used as found), -dir (machine.file_system and
		// machine.device say what it put the data dirs on), and -pool (which measures nothing).
		Options: map[string]any{
			"warmup": o.warmup, "cycle_warmup": o.cycleWarmup(), "list_runs": o.listRuns, "status_runs": o.statusRuns, "only": o.only, "tls": o.tls, "tls_runs": o.tlsRuns, "rss_runs": o.rssRuns,
			"change_runs": o.changeRuns, "conf_runs": o.confRuns, "history_conf_runs": o.historyConfRuns, "url_runs": o.urlRuns, "history": o.history, "history_entries": o.historyEntries, "history_control": o.historyControl, "fsync_runs": o.fsyncRuns,
			"cycles": o.cycles, "history_cycles": o.historyCycles, "replace_runs": o.replaceRuns, "dead_replace_runs": o.deadReplaceRuns, "removals": o.removals, "etcd_removals": o.etcdRemovals, "entries": o.entries, "snapshot_count": o.snapshotCount, "idle_s": o.idle.Seconds(),
			"log_level": o.logLevel, "profile": o.profile, "profile_for_s": o.profileFor.Seconds(),
		},
		Notes: []string{},
	}
}

func (r *report) note(s string) { r.Notes = append(r.Notes, s) }

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// loadavg returns the 1, 5 and 15 minute load averages.
func loadavg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	for _, line := range strings.Split(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// device names the block device holding dir, its driver and whether the kernel calls it
// rotational, from /proc/self/mountinfo and /sys/block.
func device(dir string) string {
	var best, src string
	for _, line := range strings.Split(readFile("/proc/self/mountinfo"), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 2 {
			continue
		}
		mnt := f[4]
		if (strings.HasPrefix(dir, mnt+"/") || dir == mnt || mnt == "/") && len(mnt) >= len(best) {
			best, src = mnt, g[1]
		}
	}
	if !strings.HasPrefix(src, "/dev/") {
		return src
	}
	name := filepath.Base(src)
	sys := filepath.Join("/sys/class/block", name)
	// A partition's queue is its disk's.
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		if p, err := filepath.EvalSymlinks(sys); err == nil {
			sys = filepath.Dir(p)
		}
	}
	desc := src
	if d, err := filepath.EvalSymlinks(filepath.Join(sys, "device", "driver")); err == nil {
		desc += ", driver " + filepath.Base(d)
	}
	if model := strings.TrimSpace(readFile(filepath.Join(sys, "device", "model"))); model != "" {
		desc += ", model " + model
	}
	switch strings.TrimSpace(readFile(filepath.Join(sys, "queue", "rotational"))) {
	case "0":
		desc += ", rotational=0"
	case "1":
		desc += ", rotational=1"
	}
	return desc
}

// figures are the raw measurements of one run.
type figures struct {
	lists        map[string][]runResult
	statuses     map[string][]runResult // endpoint status --cluster
	clusterStat  *statusFigures         // cluster status
	peaks        map[string]samples     // peak RSS of member list processes, MiB
	inits        map[string]initProfile
	pairs        map[string]samples
	conf         map[route]samples
	confLong     map[route]samples // after -history removals
	urls         *urlFigures
	fsync        samples
	bolt         samples
	rss          samples
	ready        samples
	etcdReady    samples // learner ready on etcd 3.7.1, the same steps
	learners     []learnerResult
	gaps         samples
	removals     []removalResult
	replaces     map[string]samples // member replace end to end, per CLI
	replacements []replaceResult
	// deadReplaces and deadReplacements: the replacement of a dead follower, per CLI.
	deadReplaces     map[string]samples
	deadReplacements []replaceResult
	v3               []removalResult // leader removals seen by clientv3
	etcdV3           []removalResult // the same on a real etcd cluster (-etcd-removals)
	fill             fillResult
	tls              *tlsFigures     // nil with -tls=false
	history          *historyFigures // nil with -history-entries=0
}

func ptr[T any](v T) *T { return &v }

func stat(key, figure, unit string, s samples, warmup int, target string) row {
	return row{Key: key, Figure: figure, Unit: unit, Runs: len(s), Warmup: warmup,
		Median: s.median(), P99: s.p99(), Max: s.max(), Target: target}
}

func pick(rs []runResult, f func(runResult) float64) samples {
	s := make(samples, len(rs))
	for i, r := range rs {
		s[i] = f(r)
	}
	return s
}

func wallOf(r runResult) float64 { return millis(r.wall) }
func cpuOf(r runResult) float64  { return millis(r.cpu) }

// idleRSSBound is the idle RSS target: 0.65x of etcd 3.7.1's 32 MiB on these machines.
const idleRSSBound = 0.65 * 32

// fill turns the measurements into rows, with the targets docs/benchmarks.md lists (every other
// row is reported) and the ratios to the floors measured in the same run.
func (r *report) fill(f figures) {
	w, cw := r.Options["warmup"].(int), r.Options["cycle_warmup"].(int)
	ctl := f.lists["clusterctl"]
	floor := f.lists["floor"]
	etcd, haveEtcd := f.lists["etcdctl"]

	list := stat("member_list_wall", "clusterctl member list, wall (process, 3 members, one endpoint)", "ms", pick(ctl, wallOf), w, "report")
	fl := stat("floor_wall", "floor: dial + one MemberList through etcdserverpb.ClusterClient, wall (process)", "ms", pick(floor, wallOf), w, "report")
	list.Ratio, list.RatioTo = ptr(list.Median/fl.Median), "floor_wall"
	ratio := stat("member_list_vs_floor", "clusterctl member list / floor (medians)", "x", nil, w, "<= 1.2x")
	ratio.Runs, ratio.Median, ratio.P99, ratio.Max = len(ctl), list.Median/fl.Median, list.P99/fl.P99, math.NaN()
	ratio.Met = ptr(ratio.Median <= 1.2)
	start := stat("go_start_wall", "Go program that exits at once, wall (process)", "ms", pick(f.lists["gostart"], wallOf), w, "report")
	r.Rows = append(r.Rows, list, fl, ratio, start)
	if each, ok := f.lists["clusterctl_each"]; ok {
		r.Rows = append(r.Rows, stat("member_list_each_wall", "clusterctl member list of 3 endpoints, each also asked for its status (the split check), wall", "ms", pick(each, wallOf), w, "report"))
	}
	if haveEtcd {
		e := stat("etcdctl_member_list_wall", "etcdctl 3.7.1 member list, wall (same cluster)", "ms", pick(etcd, wallOf), w, "report")
		list.Ratio = nil
		r.Rows = append(r.Rows, e)
		cmp := ratio
		cmp.Key, cmp.Figure, cmp.Target, cmp.Met = "member_list_vs_etcdctl", "clusterctl member list / etcdctl member list (medians)", "report", nil
		cmp.Median, cmp.P99 = list.Median/e.Median, list.P99/e.P99
		r.Rows = append(r.Rows, cmp)
	}
	r.fillEndpointStatus(f)
	r.fillClusterStatus(f.clusterStat)
	r.fillTLS(f.tls)
	r.Rows = append(r.Rows,
		stat("member_list_cpu", "clusterctl member list, CPU user+sys", "ms", pick(ctl, cpuOf), w, "report (etcdctl vs etcd: 12 ms)"),
		stat("floor_cpu", "floor, CPU user+sys", "ms", pick(floor, cpuOf), w, "report"))
	if haveEtcd {
		r.Rows = append(r.Rows, stat("etcdctl_member_list_cpu", "etcdctl member list, CPU user+sys", "ms", pick(etcd, cpuOf), w, "report"))
	}
	for _, t := range []struct{ key, figure string }{
		{"clusterctl", "clusterctl member list"}, {"floor", "floor"}, {"gostart", "Go program that exits at once"}, {"etcdctl", "etcdctl member list"},
	} {
		p, ok := f.inits[t.key]
		if !ok {
			continue
		}
		r.Rows = append(r.Rows, stat(t.key+"_init", t.figure+", package init, sum (GODEBUG=inittrace=1)", "ms", p.total, w, "report"))
		r.note(fmt.Sprintf("package init of %s: %s", t.figure, p.top(6)))
	}

	ar := stat("add_remove_wall", "clusterctl member add --learner + member remove, wall (2 processes)", "ms", f.pairs["clusterctl"], w, "report")
	r.Rows = append(r.Rows, ar)
	if e, ok := f.pairs["etcdctl"]; ok {
		er := stat("etcdctl_add_remove_wall", "etcdctl add --learner + remove, wall (same cluster)", "ms", e, w, "report")
		ar.Ratio, ar.RatioTo = ptr(ar.Median/er.Median), "etcdctl_add_remove_wall"
		r.Rows[len(r.Rows)-1] = ar
		r.Rows = append(r.Rows, er)
	}

	fs := stat("fsync_floor", "fsync floor: append 4 KiB + fdatasync", "ms", f.fsync, w, "report")
	cc := stat("conf_change", "one conf change in process (pkg/client, leader first)", "ms", f.conf[viaLeader], 2*w, "report")
	cc.Ratio, cc.RatioTo = ptr(cc.Median/fs.Median), "fsync_floor"
	bf := stat("bolt_floor", "bbolt commit floor: one 200-byte Put per transaction", "ms", f.bolt, w, "report")
	fol := stat("conf_change_follower", "one conf change sent to a follower (forwarded)", "ms", f.conf[viaFollower], 2*w, "report")
	long := stat("conf_change_long_history", fmt.Sprintf("one conf change, %d removed IDs later", r.Options["history"]), "ms", f.confLong[viaLeader], 2*w, "report")
	long.Ratio, long.RatioTo = ptr(long.Median/cc.Median), "conf_change"
	longFol := stat("conf_change_follower_long_history", fmt.Sprintf("one conf change sent to a follower, %d removed IDs later", r.Options["history"]), "ms", f.confLong[viaFollower], 2*w, "report")
	longFol.Ratio, longFol.RatioTo = ptr(longFol.Median/fol.Median), "conf_change_follower"
	r.Rows = append(r.Rows, cc, fol, long, longFol, fs, bf)
	if u := f.urls; u != nil {
		one := stat("url_update_one", "a learner's peer URL update, 1 URL (in process, leader)", "ms", u.oneURL, w, "report")
		most := stat("url_update_max", fmt.Sprintf("a learner's peer URL update, %d URLs, the most a member may have", membership.MaxURLs), "ms", u.maxURLs, w, "report")
		most.Ratio, most.RatioTo = ptr(most.Median/one.Median), "url_update_one"
		dry := stat("url_dry_run_add_3000", fmt.Sprintf("dry-run add of %d peer URLs beside a learner of %d (refused)", dryRunURLs, membership.MaxURLs), "ms", u.dryRun, w, "report (etcd 3.7.1: < 0.7 s at 30,000)")
		dry.Ratio, dry.RatioTo = ptr(dry.Median/one.Median), "url_update_one"
		r.Rows = append(r.Rows, one, most, dry)
	}

	lr := stat("leader_removal_gap", "leader removal: longest time without a successful linearizable member list", "ms", f.gaps, cw, "<= 50 ms in every one")
	lr.Met = ptr(lr.Max <= 50)
	ready := stat("learner_ready", fmt.Sprintf("learner ready: process start to promote (log of %d entries)", f.fill.RaftIndex), "ms", f.ready, cw, "report")
	r.Rows = append(r.Rows, lr, ready)
	if len(f.etcdReady) > 0 {
		e := stat("etcd_learner_ready", "learner ready on etcd 3.7.1, the same steps, behind -entries puts of 100 bytes", "ms", f.etcdReady, cw, "report")
		ready.Target, ready.Met = "<= etcd's", ptr(ready.Median <= e.Median)
		ready.Ratio, ready.RatioTo = ptr(ready.Median/e.Median), "etcd_learner_ready"
		r.Rows[len(r.Rows)-1] = ready
		r.Rows = append(r.Rows, e)
	}
	r.fillReplace(f.replaces, cw)
	r.fillLeaderMove(f.replacements, cw)
	r.Replacements = f.replacements
	r.fillDeadReplace(f.deadReplaces, cw)
	r.DeadReplacements = f.deadReplacements
	r.fillV3Removals(f.v3, f.etcdV3, cw)

	idle := stat("idle_rss", "idle clusterd RSS after 10 s (each of 3)", "MiB", f.rss, 0, fmt.Sprintf("<= %.1f MiB", idleRSSBound))
	idle.Met = ptr(idle.Max <= idleRSSBound)
	r.Rows = append(r.Rows, idle,
		stat("member_list_peak_rss", "clusterctl member list peak RSS", "MiB", f.peaks["clusterctl"], w, "report"),
		stat("floor_peak_rss", "floor peak RSS", "MiB", f.peaks["floor"], w, "report"),
		stat("go_start_peak_rss", "Go program that exits at once, peak RSS", "MiB", f.peaks["gostart"], w, "report"))
	if haveEtcd {
		r.Rows = append(r.Rows, stat("etcdctl_peak_rss", "etcdctl member list peak RSS", "MiB", f.peaks["etcdctl"], w, "report"))
	}
	r.fillHistory(f.history)
	r.Machine.LoadAfter = loadavg()
	r.Removals = f.removals
	r.Learners = f.learners
	r.Fill = &f.fill
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func (r *report) printTable(w io.Writer) {
	fmt.Fprintf(w, "machine: %d CPUs, %s, kernel %s, %s, %s on %s\nload average before: %s, after: %s\n\n",
		r.Machine.CPUs, r.Machine.CPUModel, r.Machine.Kernel, r.Machine.GoVersion, r.Machine.FileSystem,
		r.Machine.Device, r.Machine.LoadBefore, r.Machine.LoadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tunit\truns (+warm-up)\tmedian\tp99\tmax\ttarget\tratio\tmet")
	for _, x := range r.Rows {
		ratio := ""
		if x.Ratio != nil {
			ratio = fmt.Sprintf("%.2fx %s", *x.Ratio, x.RatioTo)
		}
		met := ""
		if x.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*x.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d (+%d)\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Figure, x.Unit, x.Runs, x.Warmup,
			num(x.Median), num(x.P99), num(x.Max), x.Target, ratio, met)
	}
	tw.Flush()
	for _, l := range r.Learners {
		fmt.Fprintf(w, "learner %s: started %s, promoted after %.1f ms, %d promote attempts\n", l.Name, l.StartedAt, l.ReadyMS, l.Attempts)
	}
	for _, rm := range r.Removals {
		fmt.Fprintf(w, "leader removal: longest gap %.1f ms from %+.1f ms, %d lists ok (%d after the removal), %d failed, remove took %.1f ms, removed member: %s\n",
			rm.LongestGapMS, rm.GapFromMS, rm.Successes, rm.SuccessesAfter, rm.Failures, rm.RemoveMS, rm.ExitStatus)
		if rm.FirstError != "" {
			fmt.Fprintf(w, "  first failed list: %s\n", rm.FirstError)
		}
	}
	for _, x := range r.DeadReplacements {
		fmt.Fprintf(w, "replacement of the dead %s by %s (%s): %.1f ms; remove, add, promote done at %.1f, %.1f, %.1f ms",
			x.Old, x.Name, x.CLI, x.TotalMS, x.StepsMS[0], x.StepsMS[1], x.StepsMS[2])
		if x.PromoteAttempts > 0 {
			fmt.Fprintf(w, ", %d promote attempts", x.PromoteAttempts)
		}
		fmt.Fprintln(w)
	}
	for _, x := range r.Replacements {
		fmt.Fprintf(w, "replacement of %s by %s (%s): %.1f ms; add, promote, move, remove done at %.1f, %.1f, %.1f, %.1f ms",
			x.Old, x.Name, x.CLI, x.TotalMS, x.StepsMS[0], x.StepsMS[1], x.StepsMS[2], x.StepsMS[3])
		if x.PromoteAttempts > 0 {
			fmt.Fprintf(w, ", %d promote attempts", x.PromoteAttempts)
		}
		fmt.Fprintln(w)
	}
	for _, rm := range r.V3Removals {
		printV3Removal(w, "clientv3", rm)
	}
	for _, rm := range r.EtcdV3Removals {
		printV3Removal(w, "etcd, clientv3", rm)
	}
	if r.Fill != nil {
		fmt.Fprintf(w, "log: %d conf changes in %.1f s, raft index %d\n", r.Fill.Changes, r.Fill.Seconds, r.Fill.RaftIndex)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// printV3Removal prints one removal seen by clientv3.
func printV3Removal(w io.Writer, what string, rm removalResult) {
	fmt.Fprintf(w, "leader removal (%s): longest gap %.1f ms from %+.1f ms, %d lists ok (%d after), %d failed, remove took %.1f ms, removed member: %s\n", what,
		rm.LongestGapMS, rm.GapFromMS, rm.Successes, rm.SuccessesAfter, rm.Failures, rm.RemoveMS, rm.ExitStatus)
	if rm.FirstError != "" {
		fmt.Fprintf(w, "  first failed list: %s\n", rm.FirstError)
	}
}

// writeJSON writes the report; NaN (a p99 of a ratio, say) becomes null, as JSON has no NaN.
func (r *report) writeJSON(path string) error {
	type jrow struct {
		row
		Median *float64 `json:"median"`
		P99    *float64 `json:"p99"`
		Max    *float64 `json:"max"`
	}
	opt := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	out := struct {
		*report
		Rows []jrow `json:"rows"`
	}{report: r}
	for _, x := range r.Rows {
		out.Rows = append(out.Rows, jrow{row: x, Median: opt(x.Median), P99: opt(x.P99), Max: opt(x.Max)})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
