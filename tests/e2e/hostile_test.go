package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire"
	"github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A hostile peer speaks the peer protocol to a 3-member cluster with one voter killed: as a
// stranger, and in the members' names (the dead voter's above all), with forged senders,
// receivers and cluster IDs and stale terms, on every peer method. Over peer TLS it holds a
// certificate the peer CA signed for another host. No member changes its membership, its
// liveness (the strict check still refuses to remove a live voter), its tombstone or its
// running state because of it; each logs the notices it did not believe.
func TestHostilePeer(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[secure], func(t *testing.T) { hostilePeer(t, secure) })
	}
}

// hostile is what the attacker knows (all of it public: member list -w json, status) and holds.
type hostile struct {
	cluster uint64
	ids     map[string]uint64
	creds   credentials.TransportCredentials // nil on a plain peer network
	secure  bool
}

func hostilePeer(t *testing.T, secure bool) {
	c, h, ctlArgs := hostileCluster(t, secure)
	lead, _, err := c.WaitLeader(tlsWait)
	if err != nil {
		t.Fatal(err)
	}
	var dead *cluster.Member
	for _, m := range c.Members() {
		if m != lead && dead == nil {
			dead = m
		}
	}
	if err := c.Kill(dead.Name); err != nil {
		t.Fatal(err)
	}
	live := c.Running()
	var other *cluster.Member
	for _, m := range live {
		if m != lead {
			other = m
		}
	}
	removeOther := func() (string, int) {
		return clusterctl(t, ctlArgs, "--endpoints="+lead.ClientAddr, "member", "remove", fmt.Sprintf("%x", h.ids[other.Name]), "--dry-run")
	}
	// Once the leader has gone an election timeout without the dead voter's traffic, removing
	// a live voter is refused (quorum protection).
	if err := proc.Poll(tlsWait, "the removal of a live voter refused", func() (bool, error) {
		_, code := removeOther()
		return code == 12, nil
	}); err != nil {
		t.Fatal(err)
	}

	for _, target := range live {
		h.attack(t, target, dead)
	}
	// The strict check counts raft's own traffic only: a live voter's removal stays refused
	// while the forger speaks in the dead voter's name, to whichever member leads now.
	for round := range 3 {
		lead, _, err = c.WaitLeader(tlsWait, namesOf(live)...)
		if err != nil {
			t.Fatal(err)
		}
		h.claimLife(t, lead, dead)
		if out, code := removeOther(); code != 12 {
			t.Fatalf("round %d: dry-run removal of live voter %s with %s dead, after forged liveness: exit %d, want 12\n%s", round, other.Name, dead.Name, code, out)
		}
	}
	// Every live member was told it is removed, asked the cluster, and was not confirmed.
	for _, m := range live {
		if err := proc.Poll(tlsWait, m.Name+" logs the unconfirmed removal", func() (bool, error) {
			b, err := os.ReadFile(m.Stderr)
			return err == nil && strings.Contains(string(b), "does not confirm it: ignored"), err
		}); err != nil {
			t.Fatal(err)
		}
		if !m.Running() {
			t.Fatalf("%s stopped", m.Name)
		}
	}
	// Nothing changed: the dead voter comes back, the three agree on the same membership, and
	// every member stops cleanly and starts again on its data (no tombstone anywhere).
	if err := c.Restart(dead.Name); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.WaitLeader(tlsWait, namesOf(c.Members())...); err != nil {
		t.Fatal(err)
	}
	h.sameMembership(t, c)
	for _, m := range c.Members() {
		if err := c.Stop(m.Name, tlsWait); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	for _, m := range c.Members() {
		if err := c.Restart(m.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.WaitLeader(tlsWait, namesOf(c.Members())...); err != nil {
		t.Fatal(err)
	}
	h.sameMembership(t, c)
}

// hostileCluster starts three members, plain or with TLS on both ports, and returns what the
// attacker knows and holds, and clusterctl's flags for the cluster.
func hostileCluster(t *testing.T, secure bool) (*cluster.Cluster, *hostile, []string) {
	h := &hostile{ids: map[string]uint64{}, secure: secure}
	var c *cluster.Cluster
	var ctlArgs []string
	if secure {
		var ca *testpki.CA
		c, ca = tlsCluster(t, 3)
		// A peer certificate of the cluster's own CA, for a host no member has.
		stranger, err := issue(t, ca.Peer, "stranger", testpki.WrongHost()).TLS()
		if err != nil {
			t.Fatal(err)
		}
		h.creds = credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{stranger}})
		admin := issue(t, ca.Client, "admin")
		ctlArgs = []string{"--cacert=" + ca.CertFile, "--cert=" + admin.CertFile, "--key=" + admin.KeyFile}
	} else {
		c = newCluster(t, t.TempDir(), nil)
		if _, err := c.Bootstrap(3, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitStarted(tlsWait, cluster.BootstrapNames(3)...); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.Members() {
		st, err := cluster.Status(m)
		if err != nil {
			t.Fatal(err)
		}
		h.ids[m.Name], h.cluster = st.GetHeader().GetMemberId(), st.GetHeader().GetClusterId()
	}
	return c, h, ctlArgs
}

// attack sends target every kind of forged peer call, in the name of a stranger and of each
// member, and checks how each is answered.
func (h *hostile) attack(t *testing.T, target, dead *cluster.Member) {
	t.Helper()
	conn, err := transport.Dial(target.PeerURL, h.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	to := h.ids[target.Name]
	senders := []uint64{0xdeadbeef}
	for _, id := range h.ids {
		if id != to {
			senders = append(senders, id)
		}
	}
	// Notices for this member of this cluster are taken (as hints); the others are refused.
	for _, from := range senders {
		for _, kind := range []peerspeak.Notice{peerspeak.Removed, peerspeak.Hello, peerspeak.Probe} {
			if err := peerspeak.SendNotice(ctx, conn, kind, h.cluster, from, to); err != nil {
				t.Fatalf("%s to %s from %x: %v", kind, target.Name, from, err)
			}
			for _, bad := range [][3]uint64{{h.cluster + 1, from, to}, {h.cluster, from, to + 1}} {
				if err := peerspeak.SendNotice(ctx, conn, kind, bad[0], bad[1], bad[2]); err == nil {
					t.Fatalf("%s to %s naming cluster %x and receiver %x: accepted", kind, target.Name, bad[0], bad[2])
				}
			}
		}
	}
	term := h.term(t, target)
	deadID := h.ids[dead.Name]
	refused := func(what string, envs []*peerspeak.Envelope, urls []string) {
		t.Helper()
		if err := peerspeak.SendRaft(ctx, conn, urls, envs); err == nil {
			t.Fatalf("%s to %s: accepted", what, target.Name)
		}
	}
	ack := func(from, to, term uint64) *raftpb.Message {
		return &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeatResp.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term)}
	}
	env := func(cluster, from, to uint64, m *raftpb.Message) []*peerspeak.Envelope {
		return []*peerspeak.Envelope{{ClusterID: cluster, From: from, To: to, Message: m}}
	}
	refused("another cluster's message", env(h.cluster+1, deadID, to, ack(deadID, to, term)), nil)
	refused("a message for another member", env(h.cluster, deadID, to+1, ack(deadID, to+1, term)), nil)
	refused("a raft message in another sender's name than its envelope's", env(h.cluster, 0xdeadbeef, to, ack(deadID, to, term)), nil)
	// A stale term: raft ignores it, and it is no liveness.
	stale := env(h.cluster, deadID, to, ack(deadID, to, term-1))
	if h.secure {
		refused("a stale message in the dead voter's name", stale, nil)
		refused("a stranger's message naming no URL", env(h.cluster, 0xdeadbeef, to, ack(0xdeadbeef, to, term)), nil)
		refused("a stranger's message naming a member's URL", env(h.cluster, 0xdeadbeef, to, ack(0xdeadbeef, to, term)), []string{target.PeerURL})
		// A forwarded membership change from a certificate that speaks for no member.
		removal := membership.Change{Kind: membership.KindRemove, Member: membership.Member{ID: membership.ID(to)}}
		_, err := clusterdpb.NewMembersClient(conn).Change(ctx, &clusterdpb.ChangeRequest{Change: wire.ChangeToProto(removal)})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("a stranger's forwarded removal of %s: %v, want PermissionDenied", target.Name, err)
		}
	} else {
		if err := peerspeak.SendRaft(ctx, conn, nil, stale); err != nil {
			t.Fatalf("a stale message to %s on a plain peer network: %v", target.Name, err)
		}
		// A snapshot of the current term in the dead voter's name whose data is not a
		// membership: raft would restore it, and the member could not apply it. It is refused
		// before raft sees it (the member goes on, checked by the caller).
		junk := &raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum(), From: proto.Uint64(deadID), To: proto.Uint64(to), Term: proto.Uint64(term),
			Snapshot: &raftpb.Snapshot{Data: []byte("not a membership"), Metadata: &raftpb.SnapshotMetadata{
				Index: proto.Uint64(1 << 40), Term: proto.Uint64(term), ConfState: &raftpb.ConfState{Voters: []uint64{to}},
			}}}
		refused("a snapshot whose data is not a membership", env(h.cluster, deadID, to, junk), nil)
		// The same for an append whose entry is not a proposal, which the member would stop on
		// once committed.
		st, err := cluster.Status(target)
		if err != nil {
			t.Fatal(err)
		}
		last := st.GetRaftIndex()
		appendJunk := &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), From: proto.Uint64(deadID), To: proto.Uint64(to), Term: proto.Uint64(term),
			LogTerm: proto.Uint64(term), Index: proto.Uint64(last), Commit: proto.Uint64(last + 1), Entries: []*raftpb.Entry{{
				Type: raftpb.EntryType_EntryNormal.Enum(), Term: proto.Uint64(term), Index: proto.Uint64(last + 1), Data: []byte("not a proposal"),
			}}}
		refused("an append whose entry is not a proposal", env(h.cluster, deadID, to, appendJunk), nil)
		// Logged once a minute per sender: the first of the two.
		if err := proc.Poll(tlsWait, target.Name+" logs the refused snapshot", func() (bool, error) {
			b, err := os.ReadFile(target.Stderr)
			return err == nil && strings.Contains(string(b), "refused: snapshot at 1099511627776: "), err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// claimLife tells lead, in every way the peer protocol has, that the dead member is alive: a
// greeting, and its acknowledgements of a past term (a plain peer network cannot tell a forged
// current-term acknowledgement from raft's own; over TLS one from a certificate for another host
// is refused).
func (h *hostile) claimLife(t *testing.T, lead, dead *cluster.Member) {
	t.Helper()
	conn, err := transport.Dial(lead.PeerURL, h.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	to, from := h.ids[lead.Name], h.ids[dead.Name]
	if err := peerspeak.SendNotice(ctx, conn, peerspeak.Hello, h.cluster, from, to); err != nil {
		t.Fatal(err)
	}
	term := h.term(t, lead)
	if !h.secure {
		term--
	}
	var envs []*peerspeak.Envelope
	for _, typ := range []raftpb.MessageType{raftpb.MessageType_MsgHeartbeatResp, raftpb.MessageType_MsgAppResp} {
		envs = append(envs, &peerspeak.Envelope{ClusterID: h.cluster, From: from, To: to,
			Message: &raftpb.Message{Type: typ.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term), Index: proto.Uint64(1)}})
	}
	err = peerspeak.SendRaft(ctx, conn, nil, envs)
	if h.secure && status.Code(err) != codes.PermissionDenied {
		t.Fatalf("acknowledgements in %s's name from a stranger's certificate: %v, want PermissionDenied", dead.Name, err)
	}
}

// term is target's raft term.
func (h *hostile) term(t *testing.T, target *cluster.Member) uint64 {
	t.Helper()
	st, err := cluster.Status(target)
	if err != nil {
		t.Fatal(err)
	}
	return st.GetRaftTerm()
}

// sameMembership checks that a linearizable list shows the three members the cluster started
// with, by their IDs.
func (h *hostile) sameMembership(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	err := proc.Poll(tlsWait, "the same three members", func() (bool, error) {
		list, err := cluster.MemberList(c.Members()[0], true)
		if err != nil {
			return false, nil
		}
		got := map[uint64]bool{}
		for _, m := range list.GetMembers() {
			got[m.GetID()] = true
		}
		for name, id := range h.ids {
			if !got[id] {
				return true, fmt.Errorf("%s (%x) is no longer a member: %v", name, id, list.GetMembers())
			}
		}
		if len(got) != len(h.ids) {
			return true, fmt.Errorf("members %v, want the three of %v", list.GetMembers(), h.ids)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func namesOf(ms []*cluster.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// clusterctl runs the built clusterctl with args, bounded, and returns its output and exit code.
func clusterctl(t *testing.T, args ...any) (string, int) {
	t.Helper()
	var argv []string
	for _, a := range args {
		switch a := a.(type) {
		case string:
			argv = append(argv, a)
		case []string:
			argv = append(argv, a...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "clusterctl"), argv...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
