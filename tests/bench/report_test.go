package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testFigures are made-up measurements of every row, etcdctl included.
func testFigures() figures {
	list := func(wall, cpu float64) []runResult {
		var rs []runResult
		for i := range 10 {
			d := time.Duration(float64(time.Millisecond) * (wall + float64(i)/10))
			rs = append(rs, runResult{wall: d, cpu: time.Duration(float64(time.Millisecond) * cpu)})
		}
		return rs
	}
	return figures{
		lists: map[string][]runResult{"clusterctl": list(5, 4), "floor": list(4, 3), "gostart": list(1, 0.5), "etcdctl": list(10, 9)},
		peaks: map[string]samples{"clusterctl": {11.5, 12}, "floor": {9.6}, "gostart": {2.1}, "etcdctl": {17}},
		inits: map[string]initProfile{
			"clusterctl": {total: samples{1.5, 1.6}, packages: map[string]samples{"google.golang.org/grpc": {0.2, 0.3}}},
		},
		pairs:        map[string]samples{"clusterctl": {13, 14, 15}, "etcdctl": {22, 23}},
		conf:         map[route]samples{viaLeader: {1.8, 1.9}, viaFollower: {2.6}},
		confLong:     map[route]samples{viaLeader: {1.7}, viaFollower: {2.0}},
		fsync:        samples{0.1, 0.12},
		bolt:         samples{0.15},
		rss:          samples{17, 17.01, 16.9},
		ready:        samples{25.3, 27.4},
		learners:     []learnerResult{{Name: "learner1", ReadyMS: 25.3, Attempts: 4}},
		gaps:         samples{6.8, 24.1},
		removals:     []removalResult{{LongestGapMS: 24.1, Successes: 1000, SuccessesAfter: 400, RemoveMS: 22}},
		fill:         fillResult{Changes: 9601, RaftIndex: 10036, Seconds: 16.5},
		replacements: []replaceResult{{CLI: "clusterctl", Name: "rep-clusterctl-1", Old: "infra0", TotalMS: 160, StepsMS: [4]float64{10, 120, 140, 160}}},
		replaces:     map[string]samples{"clusterctl": {150, 160, 170}, "etcdctl": {400, 420}},
		etcdV3:       []removalResult{{LongestGapMS: 1400, Successes: 50, SuccessesAfter: 20, RemoveMS: 30}},
		v3:           []removalResult{{LongestGapMS: 12.5, Successes: 300, SuccessesAfter: 100, RemoveMS: 20}, {LongestGapMS: 61, Successes: 280, SuccessesAfter: 90, RemoveMS: 21}},
		tls: &tlsFigures{
			lists: map[string][]runResult{tlsCtl: list(8, 6), tlsFloor: list(7, 5), tlsEtcdctl: list(20, 18),
				plainCtl: list(5, 4), plainFloor: list(4, 3)},
			conf: map[bool]samples{true: {2.2, 2.4}, false: {2, 2}},
		},
	}
}

func TestWriteJSON(t *testing.T) {
	o, err := parseFlags([]string{"-warmup=3", "-rss-runs=7"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	r := newReport(o, t.TempDir(), "ext4")
	r.fill(testFigures())
	path := filepath.Join(t.TempDir(), "sub", "latest.json") // writeJSON makes the directory
	if err := r.writeJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// What scripts read, by name: decoded without the program's own types.
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "machine", "options", "rows", "learners", "leader_removals", "leader_removals_clientv3", "etcd_leader_removals_clientv3", "replacements", "log_fill", "notes"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in the JSON", k)
		}
	}
	if m := raw["machine"].(map[string]any); m["file_system"] != "ext4" || m["cpus"].(float64) < 1 || m["go_version"] == "" {
		t.Errorf("machine: %v", m)
	}
	if opts := raw["options"].(map[string]any); opts["rss_runs"] != 7.0 || opts["warmup"] != 3.0 || opts["cycle_warmup"] != 1.0 || opts["idle_s"] != 10.0 {
		t.Errorf("options: %v", opts)
	}
	units := map[string]string{"member_list_wall": "ms", "member_list_vs_floor": "x", "member_list_vs_etcdctl": "x",
		"clusterctl_init": "ms", "fsync_floor": "ms", "leader_removal_gap": "ms", "learner_ready": "ms",
		"idle_rss": "MiB", "member_list_peak_rss": "MiB",
		"tls_member_list_wall": "ms", "tls_member_list_vs_etcdctl": "x", "tls_member_list_cost": "ms",
		"tls_member_list_share": "%", "tls_floor_cost": "ms", "conf_change_peer_tls": "ms",
		"tls_floor_wall": "ms", "tls_member_list_vs_floor": "x", "tls_floor_vs_etcdctl": "x",
		"member_replace_wall": "ms", "etcdctl_replace_wall": "ms", "member_replace_vs_etcdctl": "x", "leader_removal_gap_clientv3": "ms", "etcd_leader_removal_gap_clientv3": "ms"}
	rows := map[string]map[string]any{}
	for _, x := range raw["rows"].([]any) {
		row := x.(map[string]any)
		for _, k := range []string{"key", "figure", "unit", "runs", "warmup", "median", "p99", "max", "target"} {
			if _, ok := row[k]; !ok {
				t.Errorf("row %v: no %q", row["key"], k)
			}
		}
		rows[row["key"].(string)] = row
	}
	for key, unit := range units {
		if rows[key] == nil || rows[key]["unit"] != unit {
			t.Errorf("row %s: %v, want unit %s", key, rows[key], unit)
		}
	}
	// A ratio has no max: NaN in the program, null in the JSON, which has no NaN.
	if v, ok := rows["member_list_vs_floor"]["max"]; !ok || v != nil {
		t.Errorf("member_list_vs_floor max: %v (present %v), want null", v, ok)
	}
	// Each series states its warm-up; the cycles have one warm-up cycle, idle RSS none.
	for key, w := range map[string]float64{"member_list_wall": 3, "member_list_peak_rss": 3, "clusterctl_init": 3,
		"conf_change": 6, "leader_removal_gap": 1, "learner_ready": 1, "idle_rss": 0, "member_replace_wall": 1, "leader_removal_gap_clientv3": 1} {
		if rows[key]["warmup"] != w {
			t.Errorf("row %s: warm-up %v, want %v", key, rows[key]["warmup"], w)
		}
	}

	// Round trip: every value reads back as the program had it.
	var back struct {
		Rows     []row           `json:"rows"`
		Removals []removalResult `json:"leader_removals"`
		Fill     fillResult      `json:"log_fill"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(r.Rows) {
		t.Fatalf("%d rows read back, %d written", len(back.Rows), len(r.Rows))
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && b == 0 } // null reads back as 0
	for i, want := range r.Rows {
		got := back.Rows[i]
		if got.Key != want.Key || got.Unit != want.Unit || got.Runs != want.Runs || got.Warmup != want.Warmup ||
			!same(want.Median, got.Median) || !same(want.P99, got.P99) || !same(want.Max, got.Max) ||
			(want.Ratio == nil) != (got.Ratio == nil) || want.Ratio != nil && *want.Ratio != *got.Ratio ||
			(want.Met == nil) != (got.Met == nil) || want.Met != nil && *want.Met != *got.Met {
			t.Errorf("row %d read back as %+v, written %+v", i, got, want)
		}
	}
	if len(back.Removals) != 1 || back.Removals[0] != r.Removals[0] || back.Fill != *r.Fill {
		t.Errorf("removals %+v, fill %+v read back; written %+v, %+v", back.Removals, back.Fill, r.Removals, *r.Fill)
	}
	if g := rows["leader_removal_gap"]; g["max"] != 24.1 || g["runs"] != 2.0 {
		t.Errorf("leader_removal_gap: %v", g)
	}
	// member replace: medians 160 and 410; the clientv3 removals: one of two over 50 ms fails the target.
	if v := rows["member_replace_vs_etcdctl"]; math.Abs(v["median"].(float64)-160.0/410) > 1e-9 || v["met"] != true {
		t.Errorf("member_replace_vs_etcdctl %v", v)
	}
	if v := rows["leader_removal_gap_clientv3"]; v["max"] != 61.0 || v["runs"] != 2.0 || v["met"] != false {
		t.Errorf("leader_removal_gap_clientv3 %v", v)
	}
	// The TLS rows: medians 8.45 (clusterctl), 7.45 (floor), 20.45 (etcdctl), 5.45 (plain clusterctl).
	if v := rows["tls_floor_wall"]; math.Abs(v["median"].(float64)-7.45) > 1e-9 || v["runs"] != 10.0 {
		t.Errorf("tls_floor_wall %v", v)
	}
	if v := rows["tls_member_list_vs_floor"]; math.Abs(v["median"].(float64)-8.45/7.45) > 1e-9 || v["max"] != nil || v["met"] != nil {
		t.Errorf("tls_member_list_vs_floor %v", v)
	}
	// The floor's ratio to etcdctl is reported, not held to the target: it says whether the
	// target is within reach.
	if v := rows["tls_floor_vs_etcdctl"]; math.Abs(v["median"].(float64)-7.45/20.45) > 1e-9 || v["max"] != nil || v["met"] != nil || v["runs"] != 10.0 {
		t.Errorf("tls_floor_vs_etcdctl %v", v)
	}
	if v := rows["tls_member_list_cost"]["median"].(float64); math.Abs(v-3) > 1e-9 {
		t.Errorf("tls_member_list_cost %v, want 3", v)
	}
	if v := rows["tls_member_list_share"]["median"].(float64); math.Abs(v-100*3/8.45) > 1e-9 {
		t.Errorf("tls_member_list_share %v, want %v", v, 100*3/8.45)
	}
	// Reported: the targets are those docs/benchmarks.md lists.
	if v := rows["tls_member_list_vs_etcdctl"]; math.Abs(v["median"].(float64)-8.45/20.45) > 1e-9 || v["met"] != nil {
		t.Errorf("tls_member_list_vs_etcdctl %v", v)
	}
}

// The history rows: each ratio of the full cluster's median to the other's, reported without a
// target; a control run names its second cluster for what it is.
func TestFillHistory(t *testing.T) {
	h := &historyFigures{
		conf:  map[bool]samples{true: {2.0, 2.1, 2.2}, false: {2.0, 2.0, 2.1}},
		ready: map[bool]samples{true: {30, 31, 33}, false: {25, 26, 27}},
		gaps:  map[bool]samples{true: {7, 8}, false: {7, 8}},
		sizes: map[bool]historySizes{true: {Events: 10000, DBBytes: 2 << 20}, false: {Events: 1, DBBytes: 1 << 20}},
	}
	for _, control := range []bool{false, true} {
		args := []string{"-only=history"}
		if control {
			args = append(args, "-history-control")
		}
		o, err := parseFlags(args, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		r := newReport(o, t.TempDir(), "ext4")
		r.fillHistory(h)
		rows := map[string]row{}
		for _, x := range r.Rows {
			rows[x.Key] = x
		}
		for key, ratio := range map[string]float64{"conf_change_full_history": 2.1 / 2.0, "learner_ready_full_history": 31.0 / 26, "leader_removal_gap_full_history": 1} {
			x := rows[key]
			if x.Ratio == nil || math.Abs(*x.Ratio-ratio) > 1e-9 || x.Met != nil || x.Target != "report" {
				t.Fatalf("control %v, %s: ratio %v met %v target %q, want ratio %v, reported", control, key, x.Ratio, x.Met, x.Target, ratio)
			}
		}
		want := map[bool]string{false: "--max-history=1", true: "the default --max-history too (-history-control)"}[control]
		if got := rows["learner_ready_short_history"].Figure; !strings.Contains(got, want) {
			t.Errorf("control %v: second cluster's row %q, want it to say %q", control, got, want)
		}
	}
}
