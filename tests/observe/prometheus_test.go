package observe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
)

// prometheusPath returns the Prometheus server, installing Debian's prometheus package (through
// scripts/install-promtool.sh, which brings the server with promtool) when it is missing; the
// test skips, saying why, only when that cannot be done.
func prometheusPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "scripts", "install-promtool.sh"))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Skip("prometheus is not installed and cannot be installed: " + strings.TrimSpace(stderr.String()))
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("Debian's prometheus package is installed but has no prometheus server on PATH")
	}
	return p
}

// shortRules is the shipped rules file with every for: at 2s and the unstarted-member
// threshold at 3s instead of 10 minutes, so the alerts fire within a test: the expressions,
// which are what is tested, are the shipped ones.
func shortRules(t *testing.T, dir string) string {
	t.Helper()
	root, err := cluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "prometheus", "clusterd-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)^(\s*)for: \S+$`).ReplaceAllString(string(b), "${1}for: 2s")
	if strings.Count(text, "member_unstarted_seconds{job=~\".*clusterd.*\"}) > 600") != 1 {
		t.Fatal("the unstarted-member rule no longer has its 600 s threshold where this test expects it")
	}
	text = strings.Replace(text, "member_unstarted_seconds{job=~\".*clusterd.*\"}) > 600", "member_unstarted_seconds{job=~\".*clusterd.*\"}) > 3", 1)
	path := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startPrometheus runs Prometheus scraping targets every second as the job clusterd, with the
// rules evaluated every second, and returns its URL. job holds further settings of the job
// (YAML indented by four spaces), or is empty.
func startPrometheus(t *testing.T, bin string, targets []string, job string) string {
	t.Helper()
	dir := t.TempDir()
	rules := shortRules(t, dir)
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: clusterd
%s    static_configs:
      - targets: [%s]
`, rules, job, strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	return "http://" + addr
}

// firing reports whether the alert is firing in Prometheus now.
func firing(promURL, alert string) (bool, error) {
	resp, err := http.Get(promURL + "/api/v1/alerts")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err
	}
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" {
			return true, nil
		}
	}
	return false, nil
}

// waitUp waits until Prometheus has scraped the target instance successfully.
func waitUp(t *testing.T, promURL, instance string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(`up{instance="`+instance+`"}`))
		if err == nil {
			var body struct {
				Data struct {
					Result []struct {
						Value []any `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if r := body.Data.Result; err == nil && len(r) == 1 && len(r[0].Value) == 2 && r[0].Value[1] == "1" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has not scraped %s within %v (%v)", instance, within, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func waitAlert(t *testing.T, promURL, alert string, want bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := firing(promURL, alert)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s firing = %v (%v), want %v within %v", alert, got, err, want, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// A real Prometheus with the shipped rules, scraping a 3-member cluster (one on its client URL): no leader fires once
// two members are killed and resolves once they are back; a learner added and never started
// fires the unstarted-member alert, which resolves when it is removed.
func TestAlertsFireAndResolve(t *testing.T) {
	bin := prometheusPath(t)
	c := newCluster(t)
	ms, err := c.Bootstrap(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := cluster.BootstrapNames(3)
	if err := c.WaitStarted(30*time.Second, names...); err != nil {
		t.Fatal(err)
	}
	// The first member, never killed, is scraped on its client URL, which serves /metrics
	// beside gRPC as etcd's does; the others on their metrics URLs.
	targets := []string{ms[0].ClientAddr}
	for _, m := range ms[1:] {
		targets = append(targets, strings.TrimPrefix(m.MetricsURL, "http://"))
	}
	prom := startPrometheus(t, bin, targets, "")
	waitAlert(t, prom, "clusterdNoLeader", false, 30*time.Second)
	waitUp(t, prom, ms[0].ClientAddr, 30*time.Second)

	for _, n := range names[1:] {
		if err := c.Kill(n); err != nil {
			t.Fatal(err)
		}
	}
	waitAlert(t, prom, "clusterdNoLeader", true, 60*time.Second)
	for _, n := range names[1:] {
		if err := c.Restart(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitStarted(30*time.Second, names...); err != nil {
		t.Fatal(err)
	}
	waitAlert(t, prom, "clusterdNoLeader", false, 60*time.Second)

	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	ctl := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "clusterctl"), append([]string{"--endpoints=" + cluster.Endpoints(ms)}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("clusterctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ctl("member", "add", "never", fmt.Sprintf("--peer-urls=http://127.0.0.1:%d", ports[0]), "--learner")
	waitAlert(t, prom, "clusterdMemberUnstarted", true, 60*time.Second)
	ctl("member", "remove", "never")
	waitAlert(t, prom, "clusterdMemberUnstarted", false, 60*time.Second)
}
