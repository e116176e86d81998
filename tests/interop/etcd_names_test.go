package interop

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// TestClusterctlEtcdNamesAndIDs pins what etcd 3.7.1 leaves to clusterctl: etcd accepts a second
// member under a name in use, so add --if-not-exists finds the conflict itself (exit 11, the
// membership unchanged); a learner not started has no name, so -w env names its ID on stderr and
// a name that matches nothing lists the unstarted members; the snapshot stream carries no IDs,
// so snapshot save reads them from the member's status; a peer URL given for an endpoint is
// recognised by etcd's peer /version.
func TestClusterctlEtcdNamesAndIDs(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members()[:1])
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	infra1, err := c.Member("infra1")
	if err != nil {
		t.Fatal(err)
	}
	id1 := mustID(t, c, "infra1")

	// a peer URL given as the endpoint: etcd's peer port is no gRPC server; its /version says
	// what it is, and the hint is clusterd's (128)
	peer := runCLI(t, ctl, "--endpoints="+infra1.PeerURL, "member", "list")
	if want := "Error: endpoint " + infra1.PeerURL + " has no etcd client service (it answers etcd's peer /version): it looks like a peer URL; give the member's client URL (--advertise-client-urls) instead\n"; peer.code != 128 || peer.stderr != want {
		t.Errorf("member list against etcd's peer URL: %v; want exit 128 and %q", peer, want)
	}

	// snapshot save: the IDs of the member the snapshot came from
	snap := runCLI(t, ctl, ep, "snapshot", "save", filepath.Join(t.TempDir(), "s.db"), "-w", "json")
	var saved struct {
		ClusterID string `json:"cluster_id"`
		MemberID  string `json:"member_id"`
	}
	if err := json.Unmarshal([]byte(snap.stdout), &saved); snap.code != 0 || err != nil ||
		saved.MemberID != fmt.Sprintf("%016x", mustID(t, c, "infra0")) || saved.ClusterID == "0000000000000000" || len(saved.ClusterID) != 16 {
		t.Errorf("snapshot save -w json: %v (%v); want the real cluster ID and infra0's ID", snap, err)
	}

	// --if-not-exists: the name with other peer URLs, a peer URL under another name
	for _, tc := range []struct{ name, url, want string }{
		{"infra1", m3.PeerURL, fmt.Sprintf("Error: etcdserver: member name already exists: member infra1 (%016x) has peer URLs %s, not %s\n", id1, infra1.PeerURL, m3.PeerURL)},
		{"infra9", infra1.PeerURL, fmt.Sprintf("Error: etcdserver: Peer URLs already exists: member \"infra1\" (%016x) has peer URLs %s, asked for %s under the name infra9\n", id1, infra1.PeerURL, infra1.PeerURL)},
	} {
		r := runCLI(t, ctl, ep, "member", "add", tc.name, "--peer-urls="+tc.url, "--learner", "--if-not-exists")
		if r.code != 11 || r.stdout != "" || r.stderr != tc.want {
			t.Errorf("member add %s --if-not-exists: %v; want exit 11 and %q", tc.name, r, tc.want)
		}
	}
	if l := runCLI(t, ctl, ep, "member", "list"); strings.Count(l.stdout, "\n") != 3 {
		t.Fatalf("a refused add changed the membership: %v", l)
	}

	// an unstarted learner: its ID on stderr with -w env, and named by the not-found error
	add := runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner", "-w", "env")
	if add.code != 0 || !strings.HasPrefix(add.stdout, "ETCD_NAME=\"infra3\"\n") {
		t.Fatalf("member add -w env: %v", add)
	}
	id3 := mustID(t, c, "infra3")
	if want := fmt.Sprintf("Member %016x added as learner to cluster ", id3); !strings.HasPrefix(add.stderr, want) {
		t.Errorf("member add -w env: stderr %q; want it to start %q", add.stderr, want)
	}
	r := runCLI(t, ctl, ep, "member", "promote", "infra3", "--wait=1s")
	want := fmt.Sprintf("Error: member not found: no member with ID or name \"infra3\"; not started yet, so without a name: %016x (%s): give the member ID\n", id3, m3.PeerURL)
	if r.code != 10 || r.stderr != want {
		t.Errorf("member promote of the unstarted learner by name: %v; want exit 10 and %q", r, want)
	}
	again := runCLI(t, ctl, ep, "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner", "--if-not-exists", "-w", "env")
	if again.code != 0 || again.stdout != add.stdout {
		t.Errorf("member add --if-not-exists of the unstarted learner: %v; want exit 0 and the same environment", again)
	}
}
