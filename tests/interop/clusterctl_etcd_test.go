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

// TestClusterctlManagesEtcd drives a real etcd 3.7.1 cluster with clusterctl through the seeds'
// walk-through: list, add a learner, start it from the printed environment, promote it, update
// its peer URLs, remove it.
func TestClusterctlManagesEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members())

	// list: etcd's members in clusterctl's format, IDs as 16 hex digits
	r := runCLI(t, ctl, ep, "member", "list")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("member list: %v", r)
	}
	for _, m := range c.Members() {
		want := fmt.Sprintf("%016x, started, %s, %s, %s, false", mustID(t, c, m.Name), m.Name, m.PeerURL, m.ClientURL())
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("member list lacks the line %q", want)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n != 3 {
		t.Errorf("member list printed %d lines, want 3", n)
	}
	r = runCLI(t, ctl, ep, "member", "list", "-w", "json")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%q", fmt.Sprintf("%016x", mustID(t, c, "infra0")))) {
		t.Errorf("member list -w json: want the IDs as hex strings: %v", r)
	}

	// add a learner; etcd refuses changes for 5 s after start-up (exit 12, unhealthy cluster)
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	r = runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner")
	if r.code != 0 {
		t.Fatalf("member add --learner: %v", r)
	}
	id := mustID(t, c, "infra3")
	hex := fmt.Sprintf("%016x", id)
	if !regexp.MustCompile(`\AMember ` + hex + ` added as learner to cluster [0-9a-f]{16}\n\nETCD_NAME="infra3"\n`).MatchString(r.stdout) {
		t.Errorf("member add --learner output:\n%s", r.stdout)
	}
	block := envBlock(r.stdout)
	for _, m := range c.Members() {
		if !strings.Contains(block, m.Name+"="+m.PeerURL) {
			t.Errorf("ETCD_INITIAL_CLUSTER lacks %s=%s:\n%s", m.Name, m.PeerURL, block)
		}
	}

	// real etcd reads the ETCD_* variables that clusterctl printed
	startFromEnv(t, c, "infra3", block)
	r = runCLI(t, ctl, ep, "member", "list")
	if want := fmt.Sprintf("%s, started, infra3, %s, %s, true\n", hex, m3.PeerURL, m3.ClientURL()); !strings.Contains(r.stdout, want) {
		t.Errorf("after the learner started, member list lacks %q:\n%s", want, r.stdout)
	}

	// promote: "not in sync" (13) until the learner has caught up
	r = runUntil(t, codeIs(13), ctl, ep, "member", "promote", hex)
	if want := fmt.Sprintf("Member %s promoted in cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member promote: %v", r)
	}

	// update: add an alias URL for the same listener, so the member keeps working
	alias := "http://localhost:" + m3.PeerURL[strings.LastIndex(m3.PeerURL, ":")+1:]
	r = runUntil(t, codeIs(12), ctl, ep, "member", "update", hex, "--peer-urls="+m3.PeerURL+","+alias)
	if want := fmt.Sprintf("Member %s updated in cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member update: %v", r)
	}
	r = runCLI(t, ctl, ep, "member", "list")
	if want := fmt.Sprintf("%s, started, infra3, %s,%s, %s, false\n", hex, m3.PeerURL, alias, m3.ClientURL()); !strings.Contains(r.stdout, want) {
		t.Errorf("after the update, member list lacks %q:\n%s", want, r.stdout)
	}

	// remove by name; etcd's removed member stops by itself with status 0
	r = runUntil(t, codeIs(12), ctl, ep, "member", "remove", "infra3")
	if want := fmt.Sprintf("Member %s removed from cluster ", hex); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("member remove: %v", r)
	}
	e, err := c.WaitExit("infra3", waitTimeout)
	if err != nil || e.Code != 0 {
		t.Errorf("removed etcd member: %v %v, want exit status 0 (etcd's behaviour)", e, err)
	}
	r = runCLI(t, ctl, ep, "member", "list")
	if strings.Contains(r.stdout, "infra3") || strings.Count(r.stdout, ", started, ") != 3 {
		t.Errorf("after the removal:\n%s", r.stdout)
	}

	// the server's errors map to clusterctl's codes against etcd too
	r = runCLI(t, ctl, ep, "member", "remove", "00000000000000ff")
	if r.code != 10 || r.stderr != "Error: etcdserver: member not found\n" {
		t.Errorf("remove of an unknown ID: %v; want exit 10 and the one line", r)
	}
	r = runCLI(t, ctl, ep, "member", "promote", fmt.Sprintf("%016x", mustID(t, c, "infra0")))
	if r.code != 1 || r.stderr != "Error: etcdserver: can only promote a learner member\n" {
		t.Errorf("promote of a voter: %v; want exit 1 and the one line", r)
	}
	r = runCLI(t, ctl, ep, "member", "add", "infra9", "--peer-urls="+c.Members()[0].PeerURL)
	if want := fmt.Sprintf("Error: etcdserver: Peer URLs already exists: member %q (%016x) has peer URLs %s, asked for %s under the name infra9\n", "infra0", mustID(t, c, "infra0"), c.Members()[0].PeerURL, c.Members()[0].PeerURL); r.code != 11 || r.stderr != want {
		t.Errorf("add with a used peer URL: %v; want exit 11 and the one line", r)
	}
}

// TestClusterctlListTableMarksEtcdLeader: real etcd's member list says nothing about the leader,
// so clusterctl asks the Status of the member that answered. The table's IS LEADER column must
// mark exactly one member, the one etcd itself names as leader (etcdctl endpoint status), whichever
// member clusterctl asks: every endpoint, or one follower alone.
func TestClusterctlListTableMarksEtcdLeader(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	all := cluster.Endpoints(c.Members())
	leaderEP, leaderID := etcdLeader(t, all)

	endpoints := []string{all}
	for _, m := range c.Members() {
		// each member alone: the leader answers for itself, a follower names whom it follows
		endpoints = append(endpoints, m.ClientAddr)
	}
	for _, eps := range endpoints {
		r := runCLI(t, ctl, "--endpoints="+eps, "member", "list", "-w", "table")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("member list -w table against %s: %v", eps, r)
		}
		header, rows := parseTable(t, r.stdout)
		want := []string{"ID", "STATUS", "NAME", "PEER ADDRS", "CLIENT ADDRS", "IS LEARNER", "IS LEADER"}
		if strings.Join(header, "|") != strings.Join(want, "|") {
			t.Fatalf("against %s: columns %q, want %q", eps, header, want)
		}
		if len(rows) != 3 {
			t.Fatalf("against %s: %d rows, want 3:\n%s", eps, len(rows), r.stdout)
		}
		leaders := 0
		for _, row := range rows {
			m, err := c.Member(row[2])
			if err != nil {
				t.Fatalf("against %s: row %q: %v", eps, row, err)
			}
			id := fmt.Sprintf("%016x", mustID(t, c, m.Name))
			wantRow := []string{id, "started", m.Name, m.PeerURL, m.ClientURL(), "false", fmt.Sprint(id == fmt.Sprintf("%016x", leaderID))}
			if strings.Join(row, "|") != strings.Join(wantRow, "|") {
				t.Errorf("against %s: row %q, want %q (etcd's leader is %016x, at %s)", eps, row, wantRow, leaderID, leaderEP)
			}
			if row[6] == "true" {
				leaders++
			}
		}
		if leaders != 1 {
			t.Errorf("against %s: %d members marked leader, want exactly 1:\n%s", eps, leaders, r.stdout)
		}
	}
	// The leader did not move while the tables were printed, or the comparison meant nothing.
	if _, after := etcdLeader(t, all); after != leaderID {
		t.Fatalf("etcd's leader changed during the test, from %016x to %016x", leaderID, after)
	}
}

// etcdLeader asks every member through etcdctl endpoint status which member leads, checks they
// all agree, and returns the leader's client address and ID.
func etcdLeader(t *testing.T, endpoints string) (string, uint64) {
	t.Helper()
	r := runCLI(t, etcd.Etcdctl, "--endpoints="+endpoints, "endpoint", "status", "-w", "json")
	if r.code != 0 {
		t.Fatalf("etcdctl endpoint status: %v", r)
	}
	var statuses []struct {
		Endpoint string
		Status   struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
			Leader uint64 `json:"leader"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &statuses); err != nil {
		t.Fatalf("etcdctl endpoint status -w json: %v\n%s", err, r.stdout)
	}
	if n := len(strings.Split(endpoints, ",")); len(statuses) != n {
		t.Fatalf("etcdctl endpoint status: %d answers, want %d:\n%s", len(statuses), n, r.stdout)
	}
	var leader uint64
	at := ""
	for _, st := range statuses {
		if st.Status.Leader == 0 || (leader != 0 && st.Status.Leader != leader) {
			t.Fatalf("etcd's members do not agree on a leader:\n%s", r.stdout)
		}
		leader = st.Status.Leader
		if st.Status.Header.MemberID == leader {
			at = st.Endpoint
		}
	}
	if at == "" {
		t.Fatalf("etcd's leader %016x is not among the endpoints:\n%s", leader, r.stdout)
	}
	return at, leader
}

// parseTable reads clusterctl's ASCII table: the header's cells and each row's, trimmed.
func parseTable(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, "+") {
			continue
		}
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
			t.Fatalf("not a table line: %q in\n%s", line, out)
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
		} else {
			rows = append(rows, cells)
		}
	}
	return header, rows
}
