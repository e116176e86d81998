package printer

import (
	"bytes"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// historyResult is infra3's life in the transcript's cluster: added by root over TLS, published
// by itself, promoted, its URL updated, removed by member replace; and before them a removal
// replayed from an older version's log (no time, no origin), and one forced.
func historyResult() *client.HistoryResult {
	at := time.Date(2026, 11, 26, 15, 4, 5, 123e6, time.UTC)
	root := membership.Origin{CN: "root", Address: "10.0.0.5:53122"}
	infra3 := func(i uint64, change string, learner bool, by membership.Origin) membership.Event {
		return membership.Event{RaftIndex: 100 + i, Term: 2, Time: at.Add(time.Duration(i) * time.Minute), Change: change,
			MemberID: 0x96dbf27657837fe1, Name: "infra3", PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: learner, By: by}
	}
	ev := []membership.Event{
		{RaftIndex: 7, Term: 2, Change: "remove", MemberID: 0x1234, Name: "old", PeerURLs: []string{"http://10.0.0.9:2380"}},
		{RaftIndex: 42, Term: 3, Time: at.Add(-time.Hour), Change: "remove", MemberID: 0x5678, Name: "lost", PeerURLs: []string{"http://10.0.0.8:2380"},
			By: membership.Origin{Clusterd: membership.OriginForceNewCluster}},
		infra3(0, "add-learner", true, root),
		infra3(1, "publish", true, membership.Origin{Clusterd: membership.OriginPublish}),
		infra3(2, "promote", false, membership.Origin{CN: "ops team", Address: "[::1]:40000"}),
		infra3(3, "update", false, membership.Origin{Address: "127.0.0.1:51000"}),
		infra3(4, "remove", false, membership.Origin{CN: "root", Address: "10.0.0.5:53200", Via: "member replace"}),
	}
	ev[2].Name = "" // added without a name, as etcdctl adds
	return &client.HistoryResult{Header: header, Events: ev, Dropped: 3}
}

func TestGoldenHistory(t *testing.T) {
	runGolden(t, []goldenCase{
		{"member_history", MemberHistory, func(p Printer, b *bytes.Buffer) error { return p.MemberHistory(b, historyResult()) }},
		{"member_history_empty", MemberHistory, func(p Printer, b *bytes.Buffer) error {
			return p.MemberHistory(b, &client.HistoryResult{Header: header})
		}},
	})
}
