package metrics

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches /metrics through the Handler, as Prometheus would, and returns the text and
// the parsed families.
func scrape(t *testing.T, m *Metrics) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q, want Prometheus's text format", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	return string(body), fams
}

// exercise calls every hook once, so that every labelled family has a series.
func exercise(m *Metrics) {
	m.ObserveLeader(1)
	m.ProposalStarted()(nil)
	m.PeerSent(2, 100)
	m.PeerReceived(2, 50)
	m.PeerSendFailed(2)
	m.PeerRoundTrip(2, time.Millisecond)
	m.BackendCommit(3 * time.Millisecond)
	m.ReadStateFrom(func() State {
		return State{ID: 1, Leader: 1, Committed: 10, Applied: 9,
			Members: []Member{{ID: 1, Started: true}, {ID: 2, Started: true}, {ID: 3, Learner: true}},
			Match:   map[uint64]uint64{1: 10, 2: 10, 3: 4}}
	})
}

// etcdContract is etcd 3.7's definition of each metric clusterd shares with it: type, help
// text and label names, copied from etcd's sources. A difference is a broken dashboard or
// alert somewhere, so this table changes only when etcd's does, with one exception: the two
// proposal indexes are counters here (etcd declares gauges named _total; docs/metrics.md).
var etcdContract = []struct {
	name   string
	typ    dto.MetricType
	help   string
	labels []string
}{
	{"etcd_server_has_leader", dto.MetricType_GAUGE, "Whether or not a leader exists. 1 is existence, 0 is not.", nil},
	{"etcd_server_is_leader", dto.MetricType_GAUGE, "Whether or not this member is a leader. 1 if is, 0 otherwise.", nil},
	{"etcd_server_leader_changes_seen_total", dto.MetricType_COUNTER, "The number of leader changes seen.", nil},
	{"etcd_server_is_learner", dto.MetricType_GAUGE, "Whether or not this member is a learner. 1 if is, 0 otherwise.", nil},
	{"etcd_server_id", dto.MetricType_GAUGE, "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.", []string{"server_id"}},
	{"etcd_server_proposals_committed_total", dto.MetricType_COUNTER, "The total number of consensus proposals committed.", nil},
	{"etcd_server_proposals_applied_total", dto.MetricType_COUNTER, "The total number of consensus proposals applied.", nil},
	{"etcd_server_proposals_pending", dto.MetricType_GAUGE, "The current number of pending proposals to commit.", nil},
	{"etcd_server_proposals_failed_total", dto.MetricType_COUNTER, "The total number of failed proposals seen.", nil},
	{"etcd_network_peer_sent_bytes_total", dto.MetricType_COUNTER, "The total number of bytes sent to peers.", []string{"To"}},
	{"etcd_network_peer_received_bytes_total", dto.MetricType_COUNTER, "The total number of bytes received from peers.", []string{"From"}},
	{"etcd_network_peer_sent_failures_total", dto.MetricType_COUNTER, "The total number of send failures from peers.", []string{"To"}},
	{"etcd_network_peer_round_trip_time_seconds", dto.MetricType_HISTOGRAM, "Round-Trip-Time histogram between peers", []string{"To"}},
	{"etcd_network_active_peers", dto.MetricType_GAUGE, "The current number of active peer connections.", []string{"Local", "Remote"}},
	{"etcd_disk_backend_commit_duration_seconds", dto.MetricType_HISTOGRAM, "The latency distributions of commit called by backend.", nil},
}

// clusterdOwn are the metrics etcd lacks.
var clusterdOwn = []struct {
	name   string
	typ    dto.MetricType
	labels []string
}{
	{"clusterd_membership_changes_total", dto.MetricType_COUNTER, []string{"kind", "outcome"}},
	{"clusterd_membership_refusals_total", dto.MetricType_COUNTER, []string{"reason"}},
	{"clusterd_membership_members", dto.MetricType_GAUGE, []string{"role", "state"}},
	{"clusterd_membership_learner_lag_entries", dto.MetricType_GAUGE, []string{"member_id"}},
	{"clusterd_membership_member_unstarted_seconds", dto.MetricType_GAUGE, []string{"member_id"}},
	{"clusterd_membership_forced_out", dto.MetricType_GAUGE, nil},
}

func labelNames(f *dto.MetricFamily) []string {
	var names []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	slices.Sort(names)
	return names
}

func TestScrapeHasEtcdsMetricsAsEtcdDefinesThem(t *testing.T) {
	m := New(Options{})
	exercise(m)
	m.ReadStateFrom(func() State {
		return State{ID: 1, Leader: 1, Members: []Member{{ID: 1}, {ID: 3, Learner: true}},
			Match: map[uint64]uint64{1: 5, 3: 5}, Active: map[uint64]bool{3: true}}
	})
	_, fams := scrape(t, m)
	for _, want := range etcdContract {
		f, ok := fams[want.name]
		if !ok {
			t.Errorf("%s: missing from the scrape", want.name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s: type %v, etcd's is %v", want.name, f.GetType(), want.typ)
		}
		if f.GetHelp() != want.help {
			t.Errorf("%s: help %q, etcd's is %q", want.name, f.GetHelp(), want.help)
		}
		wantLabels := slices.Sorted(slices.Values(want.labels))
		if got := labelNames(f); !slices.Equal(got, wantLabels) {
			t.Errorf("%s: labels %v, etcd's are %v", want.name, got, wantLabels)
		}
	}
	for _, want := range clusterdOwn {
		f, ok := fams[want.name]
		if !ok {
			t.Errorf("%s: missing from the scrape", want.name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s: type %v, want %v", want.name, f.GetType(), want.typ)
		}
		if got := labelNames(f); !slices.Equal(got, want.labels) {
			t.Errorf("%s: labels %v, want %v", want.name, got, want.labels)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s: no help text", want.name)
		}
	}
	// The Go and process collectors etcd has through Prometheus's default registry.
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s: missing from the scrape", name)
		}
	}
}

// TestHistogramBucketsAreEtcds checks the bucket bounds: a histogram_quantile over etcd's and
// clusterd's series together, or an alert on a bucket (le="0.128"), needs the same bounds.
func TestHistogramBucketsAreEtcds(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	exercise(m)
	_, fams := scrape(t, m)
	exp := func(start float64, n int) []float64 {
		var b []float64
		for i := range n {
			b = append(b, start*float64(int(1)<<i))
		}
		return append(b, math.Inf(1)) // the text format lists +Inf too
	}
	for name, want := range map[string][]float64{
		"etcd_network_peer_round_trip_time_seconds": exp(0.0001, 16),
		"etcd_disk_backend_commit_duration_seconds": exp(0.001, 14),
	} {
		var got []float64
		for _, b := range fams[name].GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d buckets %v, want %d %v", name, len(got), got, len(want), want)
		}
		for i := range got {
			if d := got[i] - want[i]; got[i] != want[i] && (d > 1e-12 || d < -1e-12) {
				t.Errorf("%s: bucket %d is %v, want %v", name, i, got[i], want[i])
			}
		}
	}
}

func TestOwnRegistryNotGlobal(t *testing.T) {
	// Two members in one process each have their own metrics; registering on a shared
	// registry would panic on the second.
	a, b := New(Options{}), New(Options{})
	a.PeerSent(2, 10)
	_, fa := scrape(t, a)
	_, fb := scrape(t, b)
	if _, ok := fa["etcd_network_peer_sent_bytes_total"]; !ok {
		t.Error("a: no peer_sent_bytes series after PeerSent")
	}
	if _, ok := fb["etcd_network_peer_sent_bytes_total"]; ok {
		t.Error("b shows a's PeerSent: the registries are shared")
	}
}

func TestNilMetricsDoesNothing(t *testing.T) {
	var m *Metrics
	m.ObserveLeader(1)
	m.ProposalStarted()(nil)
	m.PeerSent(1, 1)
	m.PeerReceived(1, 1)
	m.PeerSendFailed(1)
	m.PeerRoundTrip(1, time.Second)
	m.PeerRemoved(1)
	m.BackendCommit(time.Second)
	m.ChangeDecided(1, nil)
	m.ForcedOut(true)
	m.ReadStateFrom(func() State { return State{} })
	m.InitGRPC(nil)
	if m.GRPCServerOptions() != nil || m.Registry() != nil {
		t.Error("a nil Metrics returned options or a registry")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil Metrics' handler: %d, want 404", rec.Code)
	}
}

// value returns the value of the series of family name with exactly these label values (in
// label-name order), and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	for _, s := range fams[name].GetMetric() {
		var got []string
		for _, l := range s.GetLabel() {
			got = append(got, l.GetValue())
		}
		if !slices.Equal(got, labels) {
			continue
		}
		switch {
		case s.Counter != nil:
			return s.GetCounter().GetValue(), true
		case s.Gauge != nil:
			return s.GetGauge().GetValue(), true
		case s.Histogram != nil:
			return float64(s.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func wantValue(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	got, ok := value(fams, name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func TestLeaderChangesCountAsEtcd(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	// The first leader counts (etcd starts from no leader), a repeat does not, losing the
	// leader does not, the same leader after a leaderless spell does, another leader does.
	for _, lead := range []uint64{0, 1, 1, 0, 1, 2} {
		m.ObserveLeader(lead)
	}
	_, fams := scrape(t, m)
	wantValue(t, fams, 3, "etcd_server_leader_changes_seen_total")
}

func TestProposals(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	done1, done2, done3 := m.ProposalStarted(), m.ProposalStarted(), m.ProposalStarted()
	_, fams := scrape(t, m)
	wantValue(t, fams, 3, "etcd_server_proposals_pending")
	done1(nil)
	done2(errTest)
	_, fams = scrape(t, m)
	wantValue(t, fams, 1, "etcd_server_proposals_pending")
	wantValue(t, fams, 1, "etcd_server_proposals_failed_total")
	done3(nil)
	_, fams = scrape(t, m)
	wantValue(t, fams, 0, "etcd_server_proposals_pending")
}

type testError struct{}

func (testError) Error() string { return "etcdserver: request timed out" }

var errTest error = testError{}

func TestPeerCountersAndRemoval(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	m.PeerSent(0xa, 100)
	m.PeerSent(0xa, 20)
	m.PeerReceived(0xb, 7)
	m.PeerSendFailed(0xa)
	m.PeerRoundTrip(0xa, 2*time.Millisecond)
	_, fams := scrape(t, m)
	a, b := "000000000000000a", "000000000000000b"
	wantValue(t, fams, 120, "etcd_network_peer_sent_bytes_total", a)
	wantValue(t, fams, 7, "etcd_network_peer_received_bytes_total", b)
	wantValue(t, fams, 1, "etcd_network_peer_sent_failures_total", a)
	wantValue(t, fams, 1, "etcd_network_peer_round_trip_time_seconds", a)
	m.PeerRemoved(0xa)
	_, fams = scrape(t, m)
	for _, name := range []string{"etcd_network_peer_sent_bytes_total", "etcd_network_peer_sent_failures_total", "etcd_network_peer_round_trip_time_seconds"} {
		if _, ok := value(fams, name, a); ok {
			t.Errorf("%s{To=%q} still there after PeerRemoved", name, a)
		}
	}
	wantValue(t, fams, 7, "etcd_network_peer_received_bytes_total", b)
}

// The forced-out gauge exists at zero from the start, so an alert on it sees a 0 before the first
// check, and follows each check's finding.
func TestForcedOut(t *testing.T) {
	m := New(Options{NoProcessCollector: true})
	_, fams := scrape(t, m)
	wantValue(t, fams, 0, "clusterd_membership_forced_out")
	for _, found := range []bool{true, true, false} {
		m.ForcedOut(found)
		_, fams := scrape(t, m)
		wantValue(t, fams, boolValue(found), "clusterd_membership_forced_out")
	}
}
