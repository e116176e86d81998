package interop

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestEtcdctlManagesClusterd runs one etcdctl 3.7.1 scenario against real etcd and against
// clusterd and compares the transcripts after replacing what differs by nature (IDs, ports,
// member order, JSON numbers). What remains must be equal: the lines etcdctl prints, its error
// lines and its exit codes, and the fields of its JSON.
func TestEtcdctlManagesClusterd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	compareEtcdctl(t, nil)
}

// compareEtcdctl runs the scenario against etcd and clusterd, both plain (newCA nil) or both
// with TLS and client-certificate auth on both ports from a CA of newCA's.
func compareEtcdctl(t *testing.T, newCA func(t *testing.T) *testpki.CA) {
	ca := func(t *testing.T) *testpki.CA {
		if newCA == nil {
			return nil
		}
		return newCA(t)
	}
	var want []step
	t.Run("etcd", func(t *testing.T) { want = etcdctlScenario(t, etcd.Etcd, ca(t)) })
	var got []step
	t.Run("clusterd", func(t *testing.T) { got = etcdctlScenario(t, binDir+"/clusterd", ca(t)) })
	if len(want) == 0 || len(got) == 0 {
		t.Fatal("a scenario did not finish; see its subtest")
	}
	if len(got) != len(want) {
		t.Fatalf("clusterd's scenario ran %d steps, etcd's %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %q differs.\nagainst etcd:\n%v\nagainst clusterd:\n%v", want[i].what, want[i], got[i])
		}
	}
}

// step is one normalised etcdctl run.
type step struct {
	what   string
	code   int
	stdout string
	errors string // the Error: lines; etcdctl's JSON retry logs on stderr are not compared
}

func (s step) String() string {
	return fmt.Sprintf("exit %d\n%s%s", s.code, s.stdout, s.errors)
}

func etcdctlScenario(t *testing.T, server string, ca *testpki.CA) []step {
	c := startTLSCluster(t, server, ca)
	// Every etcdctl run gets the endpoints and, on a TLS cluster, a client certificate.
	ep := "--endpoints=" + cluster.Endpoints(c.Members())
	scheme := "http://"
	var tlsArgs []string
	if ca != nil {
		scheme = "https://"
		root, err := ca.Client("root")
		if err != nil {
			t.Fatal(err)
		}
		tlsArgs = []string{"--cacert=" + ca.CertFile, "--cert=" + root.CertFile, "--key=" + root.KeyFile}
	}
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint64{}
	for _, m := range c.Members()[:3] {
		ids[m.Name] = mustID(t, c, m.Name)
	}
	var steps []step
	record := func(what string, r result) result {
		steps = append(steps, normalize(what, r, c, ids))
		return r
	}
	ctl := func(args ...string) result {
		return runCLI(t, etcd.Etcdctl, append(append([]string{ep}, tlsArgs...), args...)...)
	}
	until := func(retry func(result) bool, args ...string) result {
		return runUntil(t, retry, etcd.Etcdctl, append(append([]string{ep}, tlsArgs...), args...)...)
	}
	hexID := func(name string) string { return fmt.Sprintf("%x", ids[name]) }
	// etcd refuses changes for 5 s after a start; clusterd should not, but the retry is harmless
	unhealthy := stderrHas("etcdserver: unhealthy cluster")

	record("list", ctl("member", "list"))
	record("list table", ctl("member", "list", "-w", "table"))
	record("list json", ctl("member", "list", "-w", "json"))

	r := until(unhealthy, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner")
	if r.code != 0 {
		t.Fatalf("member add: %v", r)
	}
	ids["infra3"] = mustID(t, c, "infra3")
	record("add learner", r)
	record("list with unstarted learner", ctl("member", "list"))
	record("list table with unstarted learner", ctl("member", "list", "-w", "table"))
	record("second learner", ctl("member", "add", "infra4", "--peer-urls="+scheme+"127.0.0.1:9", "--learner"))
	record("promote unstarted learner", ctl("member", "promote", hexID("infra3")))

	// phase 2 from etcdctl's own printed environment
	startFromEnv(t, c, "infra3", envBlock(r.stdout))
	record("promote", until(stderrHas("in sync with leader"), "member", "promote", hexID("infra3")))
	record("promote voter", ctl("member", "promote", hexID("infra0")))
	alias := scheme + "localhost:" + m3.PeerURL[strings.LastIndex(m3.PeerURL, ":")+1:]
	record("update", until(unhealthy, "member", "update", hexID("infra3"), "--peer-urls="+m3.PeerURL+","+alias))
	record("list after update", ctl("member", "list"))
	record("update unknown", ctl("member", "update", "deadbeef", "--peer-urls="+scheme+"127.0.0.1:9"))
	record("add used URL", ctl("member", "add", "infra5", "--peer-urls="+c.Members()[0].PeerURL))
	record("remove", until(unhealthy, "member", "remove", hexID("infra3")))
	if _, err := c.WaitExit("infra3", waitTimeout); err != nil {
		t.Errorf("the removed member did not stop by itself: %v", err)
	}
	record("remove again", ctl("member", "remove", hexID("infra3")))
	record("list after remove", ctl("member", "list"))
	record("list json after remove", ctl("member", "list", "-w", "json"))
	return steps
}

var (
	clusterIDRe = regexp.MustCompile(`cluster +[0-9a-f]{1,16}\b`)
	errorLineRe = regexp.MustCompile(`(?m)^Error: .*$`)
)

// normalize replaces what differs between two clusters by nature: member IDs and ports become
// the member's name, the cluster ID a placeholder; lines of a member list and entries of
// ETCD_INITIAL_CLUSTER are sorted (etcd orders by random ID); JSON becomes its shape.
func normalize(what string, r result, c *cluster.Cluster, ids map[string]uint64) step {
	out := r.stdout
	for name, id := range ids {
		// etcdctl prints IDs with %x, and with %16x (space-padded) in its success lines
		for _, f := range []string{"%016x", "%16x", "%x"} {
			out = strings.ReplaceAll(out, fmt.Sprintf(f, id), "<id "+name+">")
		}
	}
	for _, m := range c.Members() {
		port := m.PeerURL[strings.LastIndex(m.PeerURL, ":")+1:]
		out = strings.ReplaceAll(out, m.ClientAddr, "<client "+m.Name+">")
		out = strings.ReplaceAll(out, ":"+port, ":<peer port "+m.Name+">")
	}
	out = clusterIDRe.ReplaceAllString(out, "cluster <cluster id>")
	if strings.HasPrefix(strings.TrimSpace(out), "{") {
		out = jsonShape(out)
	} else {
		out = sortLines(tableCells(out))
	}
	return step{
		what:   what,
		code:   r.code,
		stdout: out,
		errors: strings.Join(errorLineRe.FindAllString(r.stderr, -1), "\n"),
	}
}

// tableCells rewrites a table with its cells trimmed and its borders dropped: column widths follow
// the replaced values, so only the cells can be compared.
func tableCells(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "│") || strings.HasPrefix(l, "|"):
			cells := strings.FieldsFunc(l, func(r rune) bool { return r == '│' || r == '|' })
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			out = append(out, "| "+strings.Join(cells, " | ")+" |")
		case strings.ContainsAny(l, "┌├└┬┼┴─+") && strings.Trim(l, "┌├└┐┤┘┬┼┴─+-") == "":
			// a border line
		default:
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sortLines sorts the lines of a member list or table body and the entries of
// ETCD_INITIAL_CLUSTER; the order of the other lines is kept.
func sortLines(s string) string {
	lines := strings.Split(s, "\n")
	var rows []int
	for i, l := range lines {
		if strings.HasPrefix(l, "ETCD_INITIAL_CLUSTER=") {
			v := strings.Trim(strings.TrimPrefix(l, "ETCD_INITIAL_CLUSTER="), `"`)
			parts := strings.Split(v, ",")
			sort.Strings(parts)
			lines[i] = `ETCD_INITIAL_CLUSTER="` + strings.Join(parts, ",") + `"`
		}
		if strings.HasPrefix(l, "<id ") || strings.HasPrefix(l, "| <id ") || strings.HasPrefix(l, "│ <id ") {
			rows = append(rows, i)
		}
	}
	sorted := make([]string, len(rows))
	for j, i := range rows {
		sorted[j] = lines[i]
	}
	sort.Strings(sorted)
	for j, i := range rows {
		lines[i] = sorted[j]
	}
	return strings.Join(lines, "\n")
}

// jsonShape renders a JSON document as its structure: object keys with the shapes of their
// values, arrays as the set of their elements' shapes, scalars as their type. Numbers such as
// IDs, terms and revisions differ between any two clusters; which fields exist must not.
func jsonShape(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "invalid JSON: " + err.Error()
	}
	return shape(v)
}

func shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + shape(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		set := map[string]bool{}
		for _, e := range x {
			set[shape(e)] = true
		}
		elems := make([]string, 0, len(set))
		for e := range set {
			elems = append(elems, e)
		}
		sort.Strings(elems)
		return "[" + strings.Join(elems, "|") + "]"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
