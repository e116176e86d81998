package metrics

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The shipped rules and their unit tests (one place for both: docs/prometheus).
const (
	alertRules     = "../../../docs/prometheus/clusterd-alerts.yml"
	alertRuleTests = "../../../docs/prometheus/clusterd-alerts_test.yml"
)

// TestAlertRules checks the shipped rules with promtool and runs their unit tests.
func TestAlertRules(t *testing.T) {
	bin := promtoolPath(t)
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertRuleTests}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRulesUseExportedMetrics: a rule on a name this package does not export never fires,
// and promtool's unit tests cannot see that, since they feed the series themselves.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	rules, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{NoProcessCollector: true})
	exercise(m)
	_, fams := scrape(t, m)
	var exprs strings.Builder
	for _, l := range strings.Split(string(rules), "\n") {
		// Comments and annotations name metrics too; only the expressions count.
		if s := strings.TrimSpace(l); !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "description:") && !strings.HasPrefix(s, "summary:") {
			exprs.WriteString(l + "\n")
		}
	}
	names := regexp.MustCompile(`\b(?:etcd|clusterd|grpc)_[a-z_]+\b`).FindAllString(exprs.String(), -1)
	if len(names) == 0 {
		t.Fatal("no metric names found in the rules")
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if _, ok := fams[base]; !ok {
			t.Errorf("the rules use %s, which this package does not export", n)
		}
	}
}
