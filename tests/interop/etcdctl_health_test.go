package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestEtcdctlHealthAgainstClusterd: etcdctl's endpoint health (a linearizable read of the key
// "health") reports every clusterd member healthy, plain and over TLS with client certificates;
// endpoint status shows etcd's default quota rather than 0 B; any other KV call is refused with
// one line saying what clusterd is. With a voter majority down, health fails as etcd's does.
func TestEtcdctlHealthAgainstClusterd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"TLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var ca *testpki.CA
			var flags []string
			if tc.tls {
				var err error
				if ca, err = testpki.NewCA(t.TempDir(), "ca", testpki.RSA2048); err != nil {
					t.Fatal(err)
				}
			}
			c := startTLSCluster(t, filepath.Join(binDir, "clusterd"), ca)
			if tc.tls {
				flags = tlsFlags(t, c, ca)
			} else {
				flags = []string{"--endpoints=" + cluster.Endpoints(c.Members())}
			}
			etcdctl := func(args ...string) result {
				return runCLI(t, etcd.Etcdctl, append(append([]string{}, flags...), args...)...)
			}

			r := etcdctl("endpoint", "health")
			if r.code != 0 || strings.Count(r.stdout, " is healthy: successfully committed proposal") != 3 {
				t.Errorf("etcdctl endpoint health: %v; want every member healthy", r)
			}
			r = etcdctl("endpoint", "health", "--cluster", "-w", "table")
			if r.code != 0 || len(regexp.MustCompile(`│ +true │`).FindAllString(r.stdout, -1)) != 3 {
				t.Errorf("etcdctl endpoint health --cluster -w table: %v", r)
			}
			r = etcdctl("endpoint", "status", "-w", "table")
			if r.code != 0 || strings.Contains(r.stdout, " 0 B ") || !strings.Contains(r.stdout, "2.1 GB") {
				t.Errorf("etcdctl endpoint status -w table: %v; want etcd's default quota", r)
			}
			statusFields(t, etcdctl("endpoint", "status", "-w", "json"))
			for _, args := range [][]string{{"put", "k", "v"}, {"get", "k"}, {"del", "k"}} {
				r = etcdctl(args...)
				if r.code == 0 || !strings.Contains(r.stderr, "clusterd keeps no keys: it serves etcd's membership API") {
					t.Errorf("etcdctl %s: %v; want the refusal naming clusterd", strings.Join(args, " "), r)
				}
			}

			// the rest of what docs/wire.md lists: snapshot save, and move-leader sent to the leader
			leader, _, err := c.WaitLeader(waitTimeout)
			if err != nil {
				t.Fatal(err)
			}
			at := append([]string{"--endpoints=" + leader.ClientURL()}, flags[1:]...)
			snap := filepath.Join(t.TempDir(), "snap.db")
			if r := runCLI(t, etcd.Etcdctl, append(at, "snapshot", "save", snap)...); r.code != 0 || !strings.Contains(r.stdout, "Snapshot saved at "+snap) {
				t.Errorf("etcdctl snapshot save: %v", r)
			}
			var to *cluster.Member
			for _, m := range c.Members() {
				if m != leader {
					to = m
					break
				}
			}
			toID := mustID(t, c, to.Name)
			if r := runCLI(t, etcd.Etcdctl, append(at, "move-leader", fmt.Sprintf("%x", toID))...); r.code != 0 || !strings.Contains(r.stdout, "Leadership transferred from ") {
				t.Errorf("etcdctl move-leader: %v", r)
			}

			// two of three down: no quorum, no linearizable read. infra2 is stopped with SIGTERM,
			// and its log says so.
			if err := c.Kill("infra1"); err != nil {
				t.Fatal(err)
			}
			if err := c.Signal("infra2", syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if e, err := c.WaitExit("infra2", waitTimeout); err != nil || e.Code != 0 {
				t.Errorf("clusterd stopped with SIGTERM: %v %v; want exit 0", e, err)
			}
			m2, _ := c.Member("infra2")
			if log, err := os.ReadFile(m2.Stderr); err != nil || !strings.Contains(string(log), "stopped") || !strings.Contains(string(log), "terminated signal received") {
				t.Errorf("clusterd's log after SIGTERM does not say it stopped on the signal (%v):\n%s", err, log)
			}
			one := append([]string{}, flags...)
			one[0] = "--endpoints=" + c.Members()[0].ClientURL()
			r = runCLI(t, etcd.Etcdctl, append(one, "endpoint", "health", "--command-timeout=2s")...)
			if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "is unhealthy") {
				t.Errorf("etcdctl endpoint health without a quorum: %v; want unhealthy", r)
			}
		})
	}
}

// statusFields checks what etcdctl endpoint status -w json shows of each clusterd member beyond
// the raft fields: the storage version of the API level clusterd speaks, the revision of an etcd
// keyspace with no keys written, and no downgrade under way, as etcd 3.7.1 answers (docs/wire.md).
func statusFields(t *testing.T, r result) {
	t.Helper()
	var rows []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
			Version        string           `json:"version"`
			StorageVersion string           `json:"storageVersion"`
			DowngradeInfo  *json.RawMessage `json:"downgradeInfo"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); r.code != 0 || err != nil || len(rows) != 3 {
		t.Fatalf("etcdctl endpoint status -w json: %v (%v)", r, err)
	}
	for _, row := range rows {
		if st := row.Status; st.StorageVersion != "3.7.0" || st.Header.Revision != 1 || st.Version != "3.7.1-clusterd" || st.DowngradeInfo == nil {
			t.Errorf("etcdctl endpoint status -w json: %+v; want storageVersion 3.7.0, revision 1:\n%s", st, r.stdout)
		}
	}
}
