package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/treecopy"
)

// statusJSON is datadir status -w json, as a script reads it.
type statusJSON struct {
	DataDirs []struct {
		DataDir      string `json:"dataDir"`
		Kind         string `json:"kind"`
		MemberID     string `json:"memberID"`
		Name         string `json:"name"`
		ClusterID    string `json:"clusterID"`
		Term         uint64 `json:"term"`
		LastIndex    uint64 `json:"lastIndex"`
		CommitIndex  uint64 `json:"commitIndex"`
		AppliedIndex uint64 `json:"appliedIndex"`
		Members      []struct {
			ID        string `json:"ID"`
			IsLearner bool   `json:"isLearner"`
		} `json:"members"`
		Removed   int  `json:"removed"`
		Tombstone bool `json:"tombstone"`
	} `json:"dataDirs"`
	MostAdvanced string `json:"mostAdvanced"`
	Reason       string `json:"reason"`
	Steps        []struct {
		Say      string   `json:"say"`
		Commands []string `json:"commands"`
	} `json:"steps"`
}

// stoppedAtDifferentPoints runs a 3-member cluster of server, adds and removes a learner, stops
// infra2, makes the other two commit more, saves a snapshot file, and stops them: infra2's log
// is behind. It returns the cluster (stopped), the members'
// IDs by name and the snapshot file.
func stoppedAtDifferentPoints(t *testing.T, server string) (*cluster.Cluster, map[string]string, string) {
	t.Helper()
	c := startCluster(t, server)
	ctl := filepath.Join(binDir, "clusterctl")
	ids := map[string]string{}
	for _, n := range cluster.BootstrapNames(3) {
		ids[n] = fmt.Sprintf("%016x", mustID(t, c, n))
	}
	m0, _ := c.Member("infra0")
	// A running member's directory is refused in one line, exit 25, and nothing is read.
	if r := runCLI(t, ctl, "datadir", "status", m0.DataDir); r.code != 25 || !strings.HasPrefix(r.stderr, "Error: data directory "+m0.DataDir+" is in use by a running member") || r.stdout != "" {
		t.Fatalf("status of a running member's directory: %v", r)
	}
	// A learner added and removed while every member runs: the removed IDs hold it.
	ep := "--endpoints=" + cluster.Endpoints(c.Members())
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	r := runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner")
	added := regexp.MustCompile(`^Member ([0-9a-f]{16}) added`).FindStringSubmatch(r.stdout)
	if r.code != 0 || added == nil {
		t.Fatalf("member add: %v", r)
	}
	// By ID: etcd knows no name of a member that never started.
	if r := runUntil(t, codeIs(12), ctl, ep, "member", "remove", added[1]); r.code != 0 {
		t.Fatalf("member remove: %v", r)
	}
	if err := c.Stop("infra2", waitTimeout); err != nil {
		t.Fatal(err)
	}
	// The other two go on committing without infra2: clusterd a learner's add (it has no key
	// space), etcd keys (it refuses a change with a member down).
	m1, _ := c.Member("infra1")
	ep = "--endpoints=" + cluster.Endpoints([]*cluster.Member{m0, m1})
	if server == etcd.Etcd {
		for i := range 3 {
			if r := runCLI(t, etcd.Etcdctl, ep, "put", fmt.Sprintf("k%d", i), "v"); r.code != 0 {
				t.Fatalf("put: %v", r)
			}
		}
	} else {
		m4, err := c.Alloc("infra4")
		if err != nil {
			t.Fatal(err)
		}
		if r := runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra4", "--peer-urls="+m4.PeerURL, "--learner"); r.code != 0 {
			t.Fatalf("member add: %v", r)
		}
	}
	snap := filepath.Join(t.TempDir(), "snap.db")
	if r := runCLI(t, ctl, ep, "snapshot", "save", snap); r.code != 0 {
		t.Fatalf("snapshot save: %v", r)
	}
	for _, n := range []string{"infra1", "infra0"} {
		if err := c.Stop(n, waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	return c, ids, snap
}

// treeState is every file under dir with its size, mode and SHA-256: what reading must leave as it was.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %v", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDataDirStatusAndCheck reads real data directories of clusterd and of etcd 3.7.1 whose
// members stopped at different points: status names every directory's member and cluster as the
// running cluster did, ranks a most advanced one first and never the one left behind, prints the
// recovery's commands with these paths; check passes every directory and snapshot file; and
// neither writes a byte into a directory.
func TestDataDirStatusAndCheck(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	ctl := filepath.Join(binDir, "clusterctl")
	// A copy of one directory of each cluster, kept past the subtests.
	kept := map[string]string{}
	keep := t.TempDir()
	for _, kind := range []string{"clusterd", "etcd"} {
		t.Run(kind, func(t *testing.T) {
			server := filepath.Join(binDir, "clusterd")
			if kind == "etcd" {
				server = etcd.Etcd
			}
			c, ids, snap := stoppedAtDifferentPoints(t, server)
			var dirs []string
			for _, n := range cluster.BootstrapNames(3) {
				m, _ := c.Member(n)
				dirs = append(dirs, m.DataDir)
			}
			kept[kind] = copyDirTo(t, dirs[0], filepath.Join(keep, kind))
			before := map[string]map[string]string{}
			for _, d := range dirs {
				before[d] = treeState(t, d)
			}

			r := runCLI(t, ctl, append([]string{"datadir", "status", "-w", "json"}, dirs...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("status: %v", r)
			}
			var st statusJSON
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
				t.Fatalf("%v\n%s", err, r.stdout)
			}
			checkStatus(t, kind, st, dirs, ids)

			r = runCLI(t, ctl, append([]string{"datadir", "status"}, dirs...)...)
			if r.code != 0 || !strings.Contains(r.stdout, "\nRestart from: "+st.MostAdvanced+"\n") ||
				!strings.Contains(r.stdout, " --force-new-cluster ") || !strings.Contains(r.stdout, "\nRecovery steps:\n") {
				t.Errorf("plain status: %v", r)
			}
			if r := runCLI(t, ctl, append([]string{"datadir", "status", "-w", "table"}, dirs...)...); r.code != 0 || !strings.Contains(r.stdout, " DATA DIR ") || !strings.Contains(r.stdout, " COMMIT INDEX ") {
				t.Errorf("table status: %v", r)
			}

			r = runCLI(t, ctl, append([]string{"datadir", "check"}, append(dirs, snap)...)...)
			if r.code != 0 || strings.Count(r.stdout, ": sound ("+kind+")\n") != 4 {
				t.Errorf("check of every directory and the snapshot file: %v", r)
			}
			for _, d := range dirs {
				after := treeState(t, d)
				if fmt.Sprint(after) != fmt.Sprint(before[d]) {
					t.Errorf("%s changed:\nbefore %v\nafter  %v", d, before[d], after)
				}
			}
		})
	}
	// Directories of different clusters (here clusterd's and etcd's) are not ranked.
	if kept["clusterd"] != "" && kept["etcd"] != "" {
		r := runCLI(t, ctl, "datadir", "status", kept["clusterd"], kept["etcd"])
		if r.code != 128 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "rank the data directories of one cluster at a time") {
			t.Errorf("status of two clusters: %v", r)
		}
	}
}

func checkStatus(t *testing.T, kind string, st statusJSON, dirs []string, ids map[string]string) {
	t.Helper()
	if len(st.DataDirs) != 3 {
		t.Fatalf("%d directories", len(st.DataDirs))
	}
	var best uint64
	for i, d := range st.DataDirs {
		name := cluster.BootstrapNames(3)[i]
		if d.DataDir != dirs[i] || d.Kind != kind || d.Name != name || d.MemberID != ids[name] || d.ClusterID != st.DataDirs[0].ClusterID || d.Tombstone {
			t.Errorf("directory %d: %+v", i, d)
		}
		if d.Removed != 1 || len(d.Members) != 3 && len(d.Members) != 4 || d.Term == 0 || d.AppliedIndex == 0 || d.LastIndex < d.CommitIndex {
			t.Errorf("directory %d: %+v", i, d)
		}
		best = max(best, d.CommitIndex)
	}
	behind := st.DataDirs[2]
	if st.MostAdvanced == behind.DataDir || behind.CommitIndex >= best {
		t.Errorf("infra2 stopped first, yet: most advanced %s, its commit %d, best %d", st.MostAdvanced, behind.CommitIndex, best)
	}
	for _, d := range st.DataDirs {
		if d.DataDir == st.MostAdvanced && d.CommitIndex != best {
			t.Errorf("the chosen %s has commit %d, not the best %d", d.DataDir, d.CommitIndex, best)
		}
	}
	steps, _ := json.Marshal(st.Steps)
	for _, want := range []string{"mv " + behind.DataDir + " " + behind.DataDir + ".aside", "--data-dir " + st.MostAdvanced + " --force-new-cluster",
		"member add infra2 --peer-urls=", "--id-file=infra2.id", `member promote \"$(cat infra2.id)\" --wait=60s`} {
		if !strings.Contains(string(steps), want) {
			t.Errorf("the steps lack %q: %s", want, steps)
		}
	}
	if !strings.HasPrefix(st.Reason, st.MostAdvanced+" (") {
		t.Errorf("reason %q", st.Reason)
	}
}

// copyDir copies a stopped member's data directory, for doctoring.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	return copyDirTo(t, src, t.TempDir())
}

// copyDirTo copies a stopped member's data directory into parent.
func copyDirTo(t *testing.T, src, parent string) string {
	t.Helper()
	dst := filepath.Join(parent, filepath.Base(src))
	if err := treecopy.Copy(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// doctorEtcd changes a copy of an etcd data directory's backend with bbolt.
func doctorEtcd(t *testing.T, dir string, f func(members, removed *bolt.Bucket) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		return f(tx.Bucket([]byte("members")), tx.Bucket([]byte("members_removed")))
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDataDirCheckFindsEtcdDefects doctors copies of a real etcd 3.7.1 data directory into the
// states two etcd bugs left behind, and datadir check names the member and both sides of each
// (exit 31); status leaves such a directory out of the ranking.
func TestDataDirCheckFindsEtcdDefects(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c, ids, _ := stoppedAtDifferentPoints(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	m0, _ := c.Member("infra0")
	m1, _ := c.Member("infra1")
	removedID := ""
	doctorEtcd(t, copyDir(t, m0.DataDir), func(_, removed *bolt.Bucket) error {
		return removed.ForEach(func(k, _ []byte) error { removedID = string(k); return nil })
	})
	if removedID == "" {
		t.Fatal("no removed member in the backend")
	}

	// etcd#19557: 3.5.1 to 3.5.19 never saved a promotion to the backend, so a voter is stored
	// as a learner.
	promoted := copyDir(t, m0.DataDir)
	doctorEtcd(t, promoted, func(members, _ *bolt.Bucket) error {
		key := []byte(strings.TrimLeft(ids["infra1"], "0"))
		var m map[string]any
		if err := json.Unmarshal(members.Get(key), &m); err != nil {
			return err
		}
		m["isLearner"] = true
		v, _ := json.Marshal(m)
		return members.Put(key, v)
	})
	r := runCLI(t, ctl, "datadir", "check", promoted)
	want := fmt.Sprintf("%s: member %s: the members bucket says learner, the backend's confState (index ", promoted, ids["infra1"])
	if r.code != 31 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, ") says voter\n") ||
		r.stderr != "Error: the stored membership is unsound: 2 disagreements in 1 path\n" {
		t.Errorf("check of a voter stored as a learner: %v", r)
	}

	// etcd#20967: a removed member stored as a member again.
	zombie := copyDir(t, m0.DataDir)
	doctorEtcd(t, zombie, func(members, _ *bolt.Bucket) error {
		return members.Put([]byte(removedID), []byte(`{"id":1,"peerURLs":["http://127.0.0.1:9"],"isLearner":true}`))
	})
	r = runCLI(t, ctl, "datadir", "check", zombie)
	n, err := strconv.ParseUint(removedID, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	zid := fmt.Sprintf("%016x", n)
	for _, w := range []string{
		fmt.Sprintf("%s: member %s: the members bucket lists it as a member, the removed IDs list it as removed\n", zombie, zid),
		fmt.Sprintf("%s: member %s: the members bucket says learner, the backend's confState (index ", zombie, zid),
	} {
		if r.code != 31 || !strings.Contains(r.stdout, w) {
			t.Errorf("check of a removed member stored as a member lacks %q: %v", w, r)
		}
	}

	// A doctored directory is never the one to restart from.
	r = runCLI(t, ctl, "datadir", "status", "-w", "json", zombie, m1.DataDir)
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 || st.MostAdvanced != m1.DataDir ||
		!strings.Contains(st.Reason, zombie+" is left out: its membership is unsound") {
		t.Errorf("status with an unsound directory: %v", r)
	}
}
