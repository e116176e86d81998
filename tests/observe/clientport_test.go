package observe

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// A plain client URL serves etcd's HTTP endpoints beside gRPC, as etcd's does: /metrics (clean
// for promtool) and /health over HTTP/1, member list over gRPC on the same port, and a
// connection that says nothing is closed after the sniff deadline (5 s, the same bound as an
// HTTP request's headers).
func TestClientURLServesMetricsAndGRPC(t *testing.T) {
	c := newCluster(t)
	ms, err := c.Bootstrap(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(30*time.Second, ms[0].Name); err != nil {
		t.Fatal(err)
	}
	m := ms[0]

	// Opened first, so that its deadline runs while the rest is checked.
	idle, err := net.Dial("tcp", m.ClientAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	opened := time.Now()

	metrics := get(t, m.ClientURL()+"/metrics", http.StatusOK)
	if !strings.Contains(metrics, "\netcd_server_has_leader 1\n") {
		t.Errorf("/metrics on the client URL has no etcd_server_has_leader 1:\n%.2000s", metrics)
	}
	if bin, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(bin, "check", "metrics")
		cmd.Stdin = strings.NewReader(metrics)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics on the client URL's scrape: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not on PATH: its check is left out")
	}
	if health := get(t, m.ClientURL()+"/health", http.StatusOK); !strings.Contains(health, `"health":"true"`) {
		t.Errorf("/health on the client URL: %s", health)
	}

	// gRPC on the same port: the real CLI, and a call of the test's own.
	out, err := exec.Command(filepath.Join(binDir, "clusterctl"), "--endpoints="+m.ClientAddr, "member", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), m.Name) {
		t.Errorf("clusterctl member list on the client URL: %v\n%s", err, out)
	}
	if _, err := cluster.MemberList(m, true); err != nil {
		t.Error(err)
	}
	// The /metrics scrape counted that call: the gRPC half is the one the metrics watch.
	if after := get(t, m.ClientURL()+"/metrics", http.StatusOK); !strings.Contains(after, `grpc_method="MemberList",grpc_service="etcdserverpb.Cluster",grpc_type="unary"} 2`) {
		t.Errorf("grpc_server_handled_total of MemberList is not 2 after two calls")
	}

	_ = idle.SetReadDeadline(opened.Add(15 * time.Second))
	n, err := idle.Read(make([]byte, 1))
	waited := time.Since(opened)
	if n != 0 || err != io.EOF {
		t.Fatalf("a silent connection: read %d bytes, %v after %v; want it closed by the member", n, err, waited)
	}
	if waited < 4*time.Second || waited > 10*time.Second {
		t.Errorf("a silent connection was closed after %v, want about 5 s", waited)
	}
}

// get fetches url with net/http and checks the status.
func get(t *testing.T, url string, want int) string {
	t.Helper()
	body, _ := getWith(t, http.DefaultClient, url, want)
	return body
}
