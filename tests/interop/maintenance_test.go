package interop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// endpoint status and health, move-leader and version, against clusterd and against real etcd
// alike; then with one member killed, each endpoint command prints a row for it and exits with
// its documented code.
func TestMaintenanceCommands(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, server, version string }{
		{"clusterd", "", "3.7.1-clusterd"},
		{"etcd", "etcd", "3.7.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			needBinaries(t)
			server := filepath.Join(binDir, "clusterd")
			if tt.server == "etcd" {
				server = etcd.Etcd
			}
			maintenanceScenario(t, startCluster(t, server), tt.version)
		})
	}
}

// statusRow is the part of endpoint status -w json checked here.
type statusRow struct {
	Endpoint string
	Status   *struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Version string `json:"version"`
		Leader  string `json:"leader"`
	}
	Name         string  `json:"name"`
	BehindLeader *uint64 `json:"behindLeader"`
	Error        string  `json:"error"`
}

func endpointStatus(t *testing.T, ctl string, args ...string) ([]statusRow, result) {
	t.Helper()
	r := runCLI(t, ctl, append(args, "endpoint", "status", "-w", "json")...)
	var rows []statusRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("endpoint status -w json: %v\n%v", err, r)
	}
	return rows, r
}

func maintenanceScenario(t *testing.T, c *cluster.Cluster, serverVersion string) {
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members())

	// status: a row an endpoint, named, one leader, nobody's lag unknown
	rows, r := endpointStatus(t, ctl, ep)
	if r.code != 0 || r.stderr != "" || len(rows) != 3 {
		t.Fatalf("endpoint status: %v", r)
	}
	leaders := 0
	for i, row := range rows {
		m := c.Members()[i]
		if row.Status == nil || row.Name != m.Name || row.BehindLeader == nil || row.Status.Version != serverVersion {
			t.Errorf("endpoint status row %d: %+v", i, row)
			continue
		}
		if row.Status.Header.MemberID != fmt.Sprintf("%016x", mustID(t, c, m.Name)) {
			t.Errorf("row %d: member %s, want %s's", i, row.Status.Header.MemberID, m.Name)
		}
		if row.Status.Leader == row.Status.Header.MemberID {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("endpoint status: %d leaders", leaders)
	}
	r = runCLI(t, ctl, "--endpoints="+c.Members()[0].ClientURL(), "endpoint", "status", "--cluster", "-w", "table")
	if r.code != 0 || strings.Count(r.stdout, "infra") != 3 || !strings.Contains(r.stdout, "BEHIND LEADER") {
		t.Errorf("endpoint status --cluster -w table: %v", r)
	}

	// health: every member serves a linearizable read
	r = runCLI(t, ctl, "--endpoints="+c.Members()[1].ClientURL(), "endpoint", "health", "--cluster")
	if r.code != 0 || strings.Count(r.stdout, " is healthy: took = ") != 3 {
		t.Errorf("endpoint health --cluster: %v", r)
	}

	// version: the server's from an endpoint that answers
	r = runCLI(t, ctl, ep, "version")
	if r.code != 0 || !strings.Contains(r.stdout, "server version: "+serverVersion+"\n") || !strings.Contains(r.stdout, "clusterctl version: ") {
		t.Errorf("version: %v", r)
	}

	// move-leader by name, sent to whichever member the endpoints say leads
	leader, leaderID, err := c.WaitLeader(waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var target *cluster.Member
	for _, m := range c.Members() {
		if m.Name != leader.Name {
			target = m
		}
	}
	targetID := mustID(t, c, target.Name)
	r = runCLI(t, ctl, "--endpoints="+target.ClientURL(), "move-leader", target.Name)
	want := fmt.Sprintf("Leadership transferred from %016x to %016x\n", leaderID, targetID)
	if r.code != 0 || r.stdout != want {
		t.Fatalf("move-leader %s: want %q: %v", target.Name, want, r)
	}
	rows, _ = endpointStatus(t, ctl, ep)
	for _, row := range rows {
		if row.Status == nil || row.Status.Leader != fmt.Sprintf("%016x", targetID) {
			t.Errorf("after move-leader: %+v", row)
		}
	}
	r = runCLI(t, ctl, ep, "move-leader", "nosuchmember")
	if r.code != 10 {
		t.Errorf("move-leader to an unknown name: want exit 10: %v", r)
	}

	// one member down: its row says why, the others answer, exit 29 and 26
	if err := c.Kill(leader.Name); err != nil {
		t.Fatal(err)
	}
	rows, r = endpointStatus(t, ctl, ep)
	if r.code != 29 || len(rows) != 3 || !regexp.MustCompile(`(?m)^Error: 1 of 3 endpoints did not answer$`).MatchString(r.stderr) {
		t.Errorf("endpoint status with %s killed: %v", leader.Name, r)
	}
	for _, row := range rows {
		down := strings.HasSuffix(leader.ClientURL(), row.Endpoint)
		if down != (row.Status == nil) || down != (row.Error != "") {
			t.Errorf("endpoint status with %s killed, row %+v", leader.Name, row)
		}
	}
	r = runCLI(t, ctl, ep, "endpoint", "health")
	if r.code != 26 || strings.Count(r.stdout, " is healthy: ") != 2 || strings.Count(r.stdout, " is unhealthy: ") != 1 {
		t.Errorf("endpoint health with %s killed: %v", leader.Name, r)
	}
	// move-leader to the killed member: clusterd refuses a member its leader no longer hears
	// (27) once an election timeout has passed, and until then tries until the time is up, as
	// etcd always does (14).
	r = runCLI(t, ctl, "--endpoints="+target.ClientURL(), "--command-timeout=2s", "move-leader", leader.Name)
	if serverVersion == "3.7.1" {
		if r.code != 14 {
			t.Errorf("move-leader to a killed etcd member: want exit 14: %v", r)
		}
	} else if r = runUntil(t, codeIs(14), ctl, "--endpoints="+target.ClientURL(), "--command-timeout=2s", "move-leader", leader.Name); r.code != 27 || !strings.Contains(r.stderr, "etcdserver: bad leader transferee") {
		t.Errorf("move-leader to a killed member: want exit 27: %v", r)
	}
}

// etcdctl move-leader works against clusterd, with etcd's refusal when sent to a follower.
func TestEtcdctlMoveLeaderOnClusterd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, filepath.Join(binDir, "clusterd"))
	leader, leaderID, err := c.WaitLeader(waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var follower *cluster.Member
	for _, m := range c.Members() {
		if m.Name != leader.Name {
			follower = m
		}
	}
	targetID := mustID(t, c, follower.Name)
	hex := fmt.Sprintf("%x", targetID)
	r := runCLI(t, etcd.Etcdctl, "--endpoints="+follower.ClientURL(), "move-leader", hex)
	if r.code == 0 || !strings.Contains(r.stderr, "no leader endpoint given") {
		t.Errorf("etcdctl move-leader through a follower alone: %v", r)
	}
	r = runCLI(t, etcd.Etcdctl, "--endpoints="+cluster.Endpoints(c.Members()), "move-leader", hex)
	want := fmt.Sprintf("Leadership transferred from %x to %x\n", leaderID, targetID)
	if r.code != 0 || r.stdout != want {
		t.Fatalf("etcdctl move-leader: want %q: %v", want, r)
	}
	if _, id, err := c.WaitLeader(waitTimeout); err != nil || id != targetID {
		t.Errorf("after etcdctl move-leader %016x leads (%v), want %016x", id, err, targetID)
	}
}
