package server_test

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// Three in-process members, each with its own metrics URL: every scrape is what the member
// knows (one leader, seen by all; three started voters; the round trip to each peer), the
// client API's gRPC series are there, and promtool finds nothing to say about a live member's output.
func TestMetricsOfALiveCluster(t *testing.T) {
	metricsURL := map[string]string{}
	for i := range 3 {
		metricsURL[fmt.Sprintf("m%d", i)] = "http://" + servertest.FreeAddr(t)
	}
	servertest.Start(t, 3, func(c *server.Config) { c.ListenMetricsURLs = []string{metricsURL[c.Name]} })

	leaders := 0
	for name, url := range metricsURL {
		var text string
		var fams map[string]*dto.MetricFamily
		servertest.Eventually(t, servertest.WaitTimeout, func() error {
			var err error
			if text, err = scrape(url); err != nil {
				return err
			}
			if fams, err = parse(text); err != nil {
				return err
			}
			if v := gaugeOrCounter(fams, "etcd_server_has_leader"); v != 1 {
				return fmt.Errorf("%s: has_leader %v", name, v)
			}
			// Every member publishes itself once it runs; each applies the others' publishes.
			if n := members(fams, "voter", "started"); n != 3 {
				return fmt.Errorf("%s: %v started voters, want 3", name, n)
			}
			// The prober's first round trips come an interval (etcd's 4 s) after the start.
			if n := len(fams["etcd_network_peer_round_trip_time_seconds"].GetMetric()); n != 2 {
				return fmt.Errorf("%s: round trips to %d peers, want 2", name, n)
			}
			return nil
		})
		leaders += int(gaugeOrCounter(fams, "etcd_server_is_leader"))
		if _, ok := fams["grpc_server_handled_total"]; !ok {
			t.Errorf("%s: no grpc_server_handled_total", name)
		}
		if gaugeOrCounter(fams, "etcd_server_proposals_applied_total") == 0 {
			t.Errorf("%s: nothing applied", name)
		}
		if bin, err := exec.LookPath("promtool"); err == nil {
			cmd := exec.Command(bin, "check", "metrics")
			cmd.Stdin = strings.NewReader(text)
			if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("%s: promtool check metrics (%v):\n%s", name, err, out)
			}
		}
	}
	if leaders != 1 {
		t.Errorf("%d members say they lead, want 1", leaders)
	}
}

func scrape(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/metrics: %s", url, resp.Status)
	}
	return string(b), err
}

func parse(text string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

func gaugeOrCounter(fams map[string]*dto.MetricFamily, name string) float64 {
	for _, s := range fams[name].GetMetric() {
		if s.Counter != nil {
			return s.GetCounter().GetValue()
		}
		return s.GetGauge().GetValue()
	}
	return -1
}

func members(fams map[string]*dto.MetricFamily, role, state string) float64 {
	for _, s := range fams["clusterd_membership_members"].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["role"] == role && labels["state"] == state {
			return s.GetGauge().GetValue()
		}
	}
	return -1
}
