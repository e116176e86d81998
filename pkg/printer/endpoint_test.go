package printer

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// TestGoldenMaintenance prints endpoint status and health, move-leader and version, each with a
// member or server that answered and one that did not, and a member list whose URL holds the
// characters JSON may escape.
func TestGoldenMaintenance(t *testing.T) {
	leader := &client.Status{Header: header, Version: "3.7.1", DBSize: 20480, DBSizeInUse: 16384, Leader: header.MemberID,
		RaftTerm: 2, RaftIndex: 42, RaftAppliedIndex: 42}
	learner := &client.Status{Header: client.Header{ClusterID: header.ClusterID, MemberID: members[0].ID, RaftTerm: 2},
		Version: "3.7.1", DBSize: 8192, DBSizeInUse: 8192, Leader: header.MemberID, RaftTerm: 2, RaftIndex: 39,
		RaftAppliedIndex: 38, IsLearner: true, Errors: []string{"etcdserver: no leader"}}
	runGolden(t, []goldenCase{
		{"endpoint_status", EndpointStatus, func(p Printer, b *bytes.Buffer) error {
			return p.EndpointStatus(b, []StatusRow{
				{EndpointStatus: client.EndpointStatus{Endpoint: "127.0.0.1:12379", Status: leader}, Name: "infra0", BehindKnown: true},
				{EndpointStatus: client.EndpointStatus{Endpoint: "127.0.0.1:42379", Status: learner}, Name: "infra3", Behind: 3, BehindKnown: true},
				{EndpointStatus: client.EndpointStatus{Endpoint: "127.0.0.1:22379", Err: errors.New("connection refused\nretrying")}},
			})
		}},
		{"endpoint_health", EndpointHealth, func(p Printer, b *bytes.Buffer) error {
			return p.EndpointHealth(b, []client.EndpointHealth{
				{Endpoint: "127.0.0.1:12379", Took: 1234567 * time.Nanosecond},
				{Endpoint: "http://127.0.0.1:22379/?a=1&b=<2>", Took: 5 * time.Second, Err: errors.New("context deadline exceeded")},
			})
		}},
		{"move_leader", MoveLeader, func(p Printer, b *bytes.Buffer) error {
			return p.MoveLeader(b, &LeaderMove{Header: header, From: header.MemberID, To: members[1].ID})
		}},
		{"version", Version, func(p Printer, b *bytes.Buffer) error {
			return p.Version(b, &Versions{Program: "3.7.1", Name: "clusterctl", Go: "go1.26.8", Server: "3.7.1"})
		}},
		{"member_list_html", MemberList, func(p Printer, b *bytes.Buffer) error {
			// JSON keeps a URL's & < > as they are, in a list of URLs as in a single string.
			return p.MemberList(b, &client.ListResult{Header: header, Members: []client.Member{
				{ID: 0x4f761153fba6cd20, Name: "a&b", PeerURLs: []string{"http://127.0.0.1:42380/?a=1&b=<2>"}},
			}})
		}},
		{"version_no_server", Version, func(p Printer, b *bytes.Buffer) error {
			return p.Version(b, &Versions{Program: "3.7.1", Name: "clusterctl", Go: "go1.26.8", ServerErr: errors.New("connection refused")})
		}},
	})
}
