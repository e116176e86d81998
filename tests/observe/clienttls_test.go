package observe

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// An https:// client URL serves etcd's HTTP endpoints beside gRPC, as etcd's does, behind the
// same client-certificate check: /metrics and /health over HTTP/1.1 and HTTP/2 (curl's and
// Prometheus's default), refused without a certificate (logged once), gRPC on the same port for
// clusterctl with the admin check in force, a renewed certificate served without a restart, and
// a real Prometheus scraping it.
func TestHTTPSClientURLServesMetricsAndGRPC(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	ca, err := testpki.NewCA(dir, "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.New(cluster.Config{
		Server: binDir + "/clusterd", Dir: dir, TLS: ca,
		Env: []string{"PATH=" + os.Getenv("PATH")}, Logf: t.Logf,
	})
	t.Cleanup(c.Close)
	ms, err := c.Bootstrap(1, []string{"--admin-cert-allowed-cn=root"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(30*time.Second, ms[0].Name); err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	reader, ops, root := clientPair(t, ca, "reader"), clientPair(t, ca, "ops"), clientPair(t, ca, "root")

	for _, h2 := range []bool{false, true} {
		hc := httpsClient(t, ca, reader, h2)
		metrics, resp := getWith(t, hc, m.ClientURL()+"/metrics", http.StatusOK)
		if want := map[bool]int{false: 1, true: 2}[h2]; resp.ProtoMajor != want {
			t.Errorf("/metrics answered over HTTP/%d, want HTTP/%d", resp.ProtoMajor, want)
		}
		if !strings.Contains(metrics, "\netcd_server_has_leader 1\n") {
			t.Errorf("/metrics on the https client URL has no etcd_server_has_leader 1:\n%.2000s", metrics)
		}
		if health, _ := getWith(t, hc, m.ClientURL()+"/health", http.StatusOK); !strings.Contains(health, `"health":"true"`) {
			t.Errorf("/health on the https client URL: %s", health)
		}
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		for _, proto := range []string{"--http1.1", "--http2"} {
			out, err := exec.Command(curl, "-sS", "--fail", proto, "--cacert", ca.CertFile, "--cert", reader.CertFile,
				"--key", reader.KeyFile, m.ClientURL()+"/metrics").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "\netcd_server_has_leader 1\n") {
				t.Errorf("curl %s /metrics: %v\n%.500s", proto, err, out)
			}
		}
	} else {
		t.Log("curl not on PATH: its check is left out")
	}

	// Without a client certificate: refused at the handshake, three times, logged once.
	for range 3 {
		if resp, err := httpsClient(t, ca, nil, false).Get(m.ClientURL() + "/metrics"); err == nil {
			resp.Body.Close()
			t.Fatalf("/metrics without a client certificate: %s, want the handshake refused", resp.Status)
		}
	}
	waitRefusals(t, m.Stderr, 1, "port=client", "didn't provide a certificate")

	// gRPC on the same port: the real CLI, the harness's probe, and the admin check.
	listsBefore := listsHandled(t, httpsClient(t, ca, reader, false), m.ClientURL())
	ctl := func(p *testpki.Pair, args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(binDir, "clusterctl"), append([]string{"--endpoints=" + m.ClientURL(),
			"--cacert=" + ca.CertFile, "--cert=" + p.CertFile, "--key=" + p.KeyFile}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ctl(reader, "member", "list"); err != nil || !strings.Contains(out, m.Name) {
		t.Errorf("clusterctl member list on the https client URL: %v\n%s", err, out)
	}
	if _, err := cluster.MemberList(m, true); err != nil {
		t.Error(err)
	}
	if out, err := ctl(ops, "member", "add", "x", "--learner", "--peer-urls=https://127.0.0.1:1"); err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("member add with a non-admin certificate: %v\n%s", err, out)
	}
	// A gRPC client that offers HTTP/1.1 too is served on the HTTP side, by gRPC's handler:
	// the same answers and the same admin check.
	both := func(p *testpki.Pair) pb.ClusterClient {
		cfg := clientTLSConfig(t, ca, p)
		cfg.NextProtos = []string{"h2", "http/1.1"}
		cc, err := grpc.NewClient("passthrough:///"+m.ClientAddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return pb.NewClusterClient(cc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := both(reader).MemberList(ctx, &pb.MemberListRequest{}); err != nil {
		t.Errorf("member list from a client offering h2 and http/1.1: %v", err)
	}
	add := &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:1"}, IsLearner: true}
	if _, err := both(ops).MemberAdd(ctx, add); status.Code(err) != codes.PermissionDenied {
		t.Errorf("member add with a non-admin certificate offering h2 and http/1.1: %v", err)
	}
	// The HTTP side's gRPC calls are counted with the others: the metrics watch the one server.
	if got := listsHandled(t, httpsClient(t, ca, reader, false), m.ClientURL()); got != listsBefore+3 {
		t.Errorf("grpc_server_handled_total of MemberList went from %d to %d after three calls, want +3", listsBefore, got)
	}

	added, err := both(root).MemberAdd(ctx, add)
	if err != nil {
		t.Fatalf("member add as root offering h2 and http/1.1: %v", err)
	}
	if out, err := ctl(root, "member", "remove", strings.ToLower(strings.TrimLeft(hex16(added.GetMember().GetID()), "0"))); err != nil {
		t.Errorf("member remove as root: %v\n%s", err, out)
	}
	// A renewed certificate serves the next connection, HTTP and gRPC alike.
	renewed, err := ca.Server(m.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := renewed.WriteTo(m.Server.CertFile, m.Server.KeyFile); err != nil {
		t.Fatal(err)
	}
	if _, resp := getWith(t, httpsClient(t, ca, reader, false), m.ClientURL()+"/health", http.StatusOK); resp.TLS.PeerCertificates[0].SerialNumber.Cmp(renewed.Cert.SerialNumber) != 0 {
		t.Errorf("/health after the renewal was served with serial %s, want %s", resp.TLS.PeerCertificates[0].SerialNumber, renewed.Cert.SerialNumber)
	}
	if out, err := ctl(reader, "member", "list"); err != nil {
		t.Errorf("member list after the renewal: %v\n%s", err, out)
	}

	// A real Prometheus, with its default HTTP settings, scrapes the https client URL.
	job := fmt.Sprintf("    scheme: https\n    tls_config:\n      ca_file: %q\n      cert_file: %q\n      key_file: %q\n",
		ca.CertFile, reader.CertFile, reader.KeyFile)
	prom := startPrometheus(t, prometheusPath(t), []string{m.ClientAddr}, job)
	waitUp(t, prom, m.ClientAddr, 30*time.Second)
}

// listsHandled is grpc_server_handled_total of the successful MemberList calls.
func listsHandled(t *testing.T, hc *http.Client, clientURL string) int {
	t.Helper()
	metrics, _ := getWith(t, hc, clientURL+"/metrics", http.StatusOK)
	const series = `grpc_server_handled_total{grpc_code="OK",grpc_method="MemberList",grpc_service="etcdserverpb.Cluster",grpc_type="unary"}`
	n, ok := servertest.Counter(metrics, series)
	if !ok {
		t.Fatalf("no %s in /metrics", series)
	}
	return n
}

func hex16(id uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[id&0xf]
		id >>= 4
	}
	return string(b)
}

func clientPair(t *testing.T, ca *testpki.CA, cn string) *testpki.Pair {
	t.Helper()
	p, err := ca.Client(cn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clientTLSConfig trusts ca and presents p (nothing when nil).
func clientTLSConfig(t *testing.T, ca *testpki.CA, p *testpki.Pair) *tls.Config {
	t.Helper()
	cfg, err := ca.ClientConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// httpsClient speaks HTTP/1.1 only, or offers h2 before http/1.1 as Prometheus and curl do.
func httpsClient(t *testing.T, ca *testpki.CA, p *testpki.Pair, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: clientTLSConfig(t, ca, p), ForceAttemptHTTP2: h2, DisableKeepAlives: true}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func getWith(t *testing.T, hc *http.Client, url string, want int) (string, *http.Response) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d\n%s", url, resp.Status, want, b)
	}
	return string(b), resp
}

// waitRefusals waits until the log has n "rejected connection" lines, each containing every
// string of want, and checks that no more come.
func waitRefusals(t *testing.T, logFile string, n int, want ...string) {
	t.Helper()
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		lines = lines[:0]
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "rejected connection") {
				lines = append(lines, l)
			}
		}
		if len(lines) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if len(lines) != n {
		t.Errorf("want %d refusal lines, got %d:\n%s", n, len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("a refusal line without %q: %s", w, l)
			}
		}
	}
}
