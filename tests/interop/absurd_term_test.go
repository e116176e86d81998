package interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// stranger is the sender of the forged messages: no member's ID.
const stranger = 0xdeadbeef

// absurdHeartbeat is a heartbeat of term 2^64-1 from a stranger to member to: after it, raft's
// next campaign overflows the term and panics.
func absurdHeartbeat(to uint64) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(stranger), To: proto.Uint64(to),
		Term: proto.Uint64(math.MaxUint64)}
}

// One heartbeat of term 2^64-1 from a stranger on the plain peer port is refused by clusterd,
// counted in clusterd_network_peer_refused_messages_total, and leaves every member serving and
// able to restart.
func TestAbsurdTermRefusedByClusterd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, filepath.Join(binDir, "clusterd"))
	target, _ := c.Member("infra0")
	st, err := cluster.Status(target)
	if err != nil {
		t.Fatal(err)
	}
	clusterID, to := st.GetHeader().GetClusterId(), mustID(t, c, "infra0")
	conn, err := transport.Dial(target.PeerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = peerspeak.SendRaft(ctx, conn, nil, []*peerspeak.Envelope{{ClusterID: clusterID, From: stranger, To: to, Message: absurdHeartbeat(to)}})
	if err == nil || !strings.Contains(err.Error(), "term 18446744073709551615") {
		t.Fatalf("the forged heartbeat: %v, want refused naming its term", err)
	}
	waitMetric(t, target, "clusterd_network_peer_refused_messages_total 1")
	// Past several election timeouts, when a member holding that term would have panicked.
	if _, _, err := c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(binDir, "clusterctl")
	for _, n := range cluster.BootstrapNames(3) {
		if err := c.Stop(n, waitTimeout); err != nil {
			t.Fatal(err)
		}
		m, _ := c.Member(n)
		if r := runCLI(t, ctl, "datadir", "check", m.DataDir); r.code != 0 {
			t.Fatalf("check of %s: %v", n, r)
		}
		if err := c.Restart(n); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitStarted(waitTimeout, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if st, err := cluster.Status(m); err != nil || st.GetRaftTerm() > 1<<32 {
			t.Errorf("%s after the restarts: %v, %v", m.Name, st, err)
		}
	}

	// A member whose stored term is already absurd (as a forged heartbeat left it before
	// clusterd refused one) does not start; reset-term brings it back.
	if err := c.Stop("infra2", waitTimeout); err != nil {
		t.Fatal(err)
	}
	m2, _ := c.Member("infra2")
	poisonClusterd(t, m2.DataDir)
	if r := runCLI(t, ctl, "datadir", "check", m2.DataDir); r.code != 31 || !strings.Contains(r.stdout, "holds term 18446744073709551615") {
		t.Fatalf("check of the poisoned directory: %v", r)
	}
	if err := c.Restart("infra2"); err != nil {
		t.Fatal(err)
	}
	if e, err := c.WaitExit("infra2", waitTimeout); err != nil || e.Code <= 0 {
		t.Fatalf("clusterd on the poisoned directory: %v, %v", e, err)
	}
	if r := runCLI(t, ctl, "datadir", "reset-term", m2.DataDir); r.code != 0 {
		t.Fatalf("reset-term: %v", r)
	}
	if err := c.Restart("infra2"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCaughtUp(waitTimeout, "infra2"); err != nil {
		t.Fatal(err)
	}
}

// poisonClusterd stores term 2^64-1 in a stopped clusterd member's HardState.
func poisonClusterd(t *testing.T, dir string) {
	t.Helper()
	s, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	hs := &raftpb.HardState{Term: proto.Uint64(math.MaxUint64), Commit: proto.Uint64(st.HardState.GetCommit())}
	if err := s.Save(storage.Update{HardState: hs}); err != nil {
		t.Fatal(err)
	}
}

// waitMetric waits until m's /metrics has the line want.
func waitMetric(t *testing.T, m *cluster.Member, want string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(m.ClientURL() + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if strings.Contains("\n"+last, "\n"+want+"\n") {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s's /metrics has no line %q; has %q", m.Name, want, grepLines(last, strings.Fields(want)[0]))
}

func grepLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// etcd 3.7.1 dies for good from one forged heartbeat of term 2^64-1, POSTed by a stranger to one
// member's plain peer port: that member panics and stores the term, and so, mostly, do the
// others it reached before it died. datadir check names the
// term in each directory (exit 31); datadir reset-term brings each back, with the learner added
// before (an acknowledged membership change) still there.
func TestAbsurdTermEtcdRecovery(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members())
	learner, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	r := runUntil(t, codeIs(12), ctl, ep, "member", "add", "infra3", "--peer-urls="+learner.PeerURL, "--learner")
	added := regexp.MustCompile(`^Member ([0-9a-f]{16}) added`).FindStringSubmatch(r.stdout)
	if r.code != 0 || added == nil {
		t.Fatalf("member add: %v", r)
	}
	target, _ := c.Member("infra0")
	st, err := cluster.Status(target)
	if err != nil {
		t.Fatal(err)
	}
	postRaft(t, target.PeerURL, st.GetHeader().GetClusterId(), absurdHeartbeat(mustID(t, c, "infra0")))
	if _, err := c.WaitExit("infra0", waitTimeout); err != nil {
		t.Fatalf("infra0 did not die of the forged term: %v", err)
	}
	// The term spreads with the dead member's last messages, so the others die of it within
	// seconds, or, when it died before it sent any, go on without it: whichever, each is stopped
	// now, and every directory that holds the term is recovered.
	var dirs []string
	for _, n := range cluster.BootstrapNames(3) {
		if _, err := c.WaitExit(n, 10*time.Second); err != nil {
			if err := c.Kill(n); err != nil {
				t.Fatal(err)
			}
		}
		m, _ := c.Member(n)
		r := runCLI(t, ctl, "datadir", "check", m.DataDir)
		switch {
		case r.code == 31 && strings.Contains(r.stdout, "holds term 18446744073709551615") &&
			strings.Contains(r.stdout, "clusterctl datadir reset-term "+m.DataDir):
			dirs = append(dirs, m.DataDir)
		case r.code == 0 && n != "infra0":
		default:
			t.Fatalf("check of %s: %v", n, r)
		}
	}
	if r := runCLI(t, ctl, append([]string{"datadir", "reset-term"}, dirs...)...); r.code != 0 || strings.Count(r.stdout, "reset to") != len(dirs) {
		t.Fatalf("reset-term: %v", r)
	}
	for _, n := range cluster.BootstrapNames(3) {
		if err := c.Restart(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitStarted(2*waitTimeout, cluster.BootstrapNames(3)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	r = runUntil(t, codeIs(12), ctl, ep, "member", "list")
	if r.code != 0 || !strings.Contains(r.stdout, added[1]) || strings.Count(r.stdout, "\n") != 4 {
		t.Fatalf("member list after the recovery: %v", r)
	}
	if r := runCLI(t, etcd.Etcdctl, ep, "put", "k", "v"); r.code != 0 {
		t.Fatalf("put after the recovery: %v", r)
	}
}

// postRaft sends m to an etcd member's peer port as etcd's pipeline does: one message a POST to
// /raft, naming the cluster; anyone on the peer network can.
func postRaft(t *testing.T, peerURL string, clusterID uint64, m *raftpb.Message) {
	t.Helper()
	body, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, peerURL+"/raft", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/protobuf")
	req.Header.Set("X-Etcd-Cluster-ID", fmt.Sprintf("%x", clusterID))
	req.Header.Set("X-Server-From", fmt.Sprintf("%x", stranger))
	req.Header.Set("X-Server-Version", "3.7.1")
	req.Header.Set("X-Min-Cluster-Version", "3.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /raft: %s %s", resp.Status, b)
	}
}
