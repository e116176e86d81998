package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/freeport"
	"github.com/clusterctl/clusterctl/pkg/server/api"
)

// member is one in-process clusterd.
type member struct {
	name, dir, peerURL, clientURL string
	cancel                        context.CancelFunc
	done                          chan error
}

// freePort is an address on 127.0.0.1 no other member of this test binary is given.
func freePort(t *testing.T) string {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

func newMember(t *testing.T, name string) *member {
	return &member{name: name, dir: filepath.Join(t.TempDir(), name),
		peerURL: "http://" + freePort(t), clientURL: "http://" + freePort(t)}
}

func (m *member) config(initial, state string, tweak func(*Config)) Config {
	cfg := Config{
		Name: m.name, DataDir: m.dir,
		ListenClientURLs: []string{m.clientURL}, AdvertiseClientURLs: []string{m.clientURL},
		ListenPeerURLs: []string{m.peerURL}, InitialAdvertisePeerURLs: []string{m.peerURL},
		InitialCluster: initial, InitialClusterState: state, InitialClusterToken: "test",
		HeartbeatInterval: 20 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		SnapshotCount: 10000, StrictReconfigCheck: true, MaxLearners: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return cfg
}

func (m *member) start(t *testing.T, cfg Config) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan error, 1)
	go func() { m.done <- srv.Run(ctx) }()
	t.Cleanup(func() { m.stop() })
}

func (m *member) stop() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(10 * time.Second):
		return errors.New("did not stop")
	}
}

// exited waits for Run to return by itself.
func (m *member) exited(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v", m.name, within)
		return nil
	}
}

func (m *member) client(t *testing.T) pb.ClusterClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+m.clientURL[len("http://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewClusterClient(conn)
}

func startCluster(t *testing.T, n int, tweak func(*Config)) []*member {
	t.Helper()
	var ms []*member
	initial := ""
	for i := range n {
		m := newMember(t, fmt.Sprintf("m%d", i))
		ms = append(ms, m)
		if i > 0 {
			initial += ","
		}
		initial += m.name + "=" + m.peerURL
	}
	for _, m := range ms {
		m.start(t, m.config(initial, "new", tweak))
	}
	for _, m := range ms {
		waitMembers(t, m, n, true)
	}
	return ms
}

func list(c pb.ClusterClient, linearizable bool) (*pb.MemberListResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.MemberList(ctx, &pb.MemberListRequest{Linearizable: linearizable})
}

// waitMembers waits until m lists n members (linearizably or from its own applied state).
func waitMembers(t *testing.T, m *member, n int, linearizable bool) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		r, err := list(m.client(t), linearizable)
		if err == nil && len(r.Members) != n {
			err = fmt.Errorf("%s lists %d members, want %d", m.name, len(r.Members), n)
		}
		return err
	})
}

// eventually retries f until it succeeds or the deadline passes.
func eventually(t *testing.T, within time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ctxWithName(name string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if name != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, api.MDMemberName, name)
	}
	return ctx, cancel
}

// addMember is phase one through c: it adds a member called name and returns it (not started),
// the answer, and the ETCD_INITIAL_CLUSTER it must start with.
func addMember(t *testing.T, c pb.ClusterClient, name string, learner bool) (*member, *pb.MemberAddResponse, string) {
	t.Helper()
	names := namesOf(t, c)
	n := newMember(t, name)
	ctx, cancel := ctxWithName(name)
	defer cancel()
	added, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{n.peerURL}, IsLearner: learner})
	if err != nil {
		t.Fatal(err)
	}
	return n, added, initialOf(added, names, name)
}

func initialOf(resp *pb.MemberAddResponse, names map[uint64]string, newName string) string {
	s := ""
	for _, m := range resp.Members {
		name := names[m.ID]
		if m.ID == resp.Member.ID {
			name = newName
		}
		for _, u := range m.PeerURLs {
			if s != "" {
				s += ","
			}
			s += name + "=" + u
		}
	}
	return s
}

// namesOf reads every member's name, unstarted ones included, from the header clusterd adds.
func namesOf(t *testing.T, c pb.ClusterClient) map[uint64]string {
	t.Helper()
	var md metadata.MD
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.MemberList(ctx, &pb.MemberListRequest{Linearizable: true}, grpc.Header(&md)); err != nil {
		t.Fatal(err)
	}
	var infos []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(md.Get(api.MDMembers)[0]), &infos); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, m := range infos {
		var id uint64
		fmt.Sscanf(m.ID, "%x", &id)
		out[id] = m.Name
	}
	return out
}

func TestBootstrapListFromEveryMember(t *testing.T) {
	ms := startCluster(t, 3, nil)
	for _, m := range ms {
		resp, err := list(m.client(t), false)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.ClusterId == 0 || resp.Header.MemberId == 0 {
			t.Fatalf("header: %+v", resp.Header)
		}
		for _, pm := range resp.Members {
			if pm.IsLearner || len(pm.PeerURLs) != 1 {
				t.Fatalf("member: %+v", pm)
			}
		}
	}
}

// The whole two-phase flow: add a learner through a follower, start it from what add returned,
// promote it, remove it; the removed member stops and never starts again on its data.
func TestAddJoinPromoteRemove(t *testing.T) {
	ms := startCluster(t, 3, nil)
	c := ms[1].client(t)
	n, added, initial := addMember(t, c, "m3", true)
	ctx, cancel := ctxWithName("")
	defer cancel()
	if _, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: added.Member.ID}); status.Convert(err).Message() != "etcdserver: can only promote a learner member which is in sync with leader" {
		t.Fatalf("promote before start: %v", err)
	}
	n.start(t, n.config(initial, "existing", nil))
	eventually(t, 10*time.Second, func() error {
		_, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: added.Member.ID})
		return err
	})
	resp, err := list(n.client(t), true)
	if err != nil || len(resp.Members) != 4 {
		t.Fatalf("list from the new member: %v %v", resp, err)
	}
	if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: added.Member.ID}); err != nil {
		t.Fatal(err)
	}
	if err := n.exited(t, 10*time.Second); !errors.Is(err, ErrRemoved) {
		t.Fatalf("removed member: %v", err)
	}
	again := &member{name: n.name, dir: n.dir, peerURL: n.peerURL, clientURL: n.clientURL}
	again.start(t, again.config(initial, "existing", nil))
	if err := again.exited(t, 5*time.Second); !errors.Is(err, ErrRemoved) {
		t.Fatalf("restart on a removed member's data: %v", err)
	}
}

// Removing the leader hands leadership over first; the rest keep answering.
// Removing the leader: it hands leadership to another voter first, so the cluster has a leader
// the moment the removal is answered rather than after an election timeout.
func TestRemoveLeader(t *testing.T) {
	// Long enough that a leaderless cluster shows: without the hand-off the others would wait
	// at least this long before electing a new leader.
	const electionTimeout = time.Second
	ms := startCluster(t, 3, func(c *Config) { c.ElectionTimeout = electionTimeout })
	resp, err := list(ms[0].client(t), true)
	if err != nil {
		t.Fatal(err)
	}
	var leader *member
	lead := leaderOf(t, ms[0])
	for _, m := range ms {
		if r, _ := list(m.client(t), false); r.Header.MemberId == lead {
			leader = m
		}
	}
	var other *member
	for _, m := range ms {
		if m != leader {
			other = m
		}
	}
	ctx, cancel := ctxWithName("")
	defer cancel()
	if _, err := other.client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: lead}); err != nil {
		t.Fatal(err)
	}
	// A linearizable read needs a leader; half an election timeout is plenty with one.
	rctx, rcancel := context.WithTimeout(context.Background(), electionTimeout/2)
	defer rcancel()
	if _, err := other.client(t).MemberList(rctx, &pb.MemberListRequest{Linearizable: true}); err != nil {
		t.Fatalf("no leader right after the leader's removal: %v", err)
	}
	if err := leader.exited(t, 10*time.Second); !errors.Is(err, ErrRemoved) {
		t.Fatalf("removed leader: %v", err)
	}
	after, err := list(other.client(t), true)
	if err != nil || len(after.Members) != len(resp.Members)-1 {
		t.Fatalf("after: %v %v", after, err)
	}
}

func leaderOf(t *testing.T, m *member) uint64 {
	t.Helper()
	var md metadata.MD
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := m.client(t).MemberList(ctx, &pb.MemberListRequest{Linearizable: true}, grpc.Header(&md)); err != nil {
		t.Fatal(err)
	}
	var id uint64
	fmt.Sscanf(md.Get(api.MDLeader)[0], "%x", &id)
	return id
}

// Concurrent changes sent to different members are serialised on the leader; none times out
// and each gets its own answer.
func TestConcurrentChanges(t *testing.T) {
	ms := startCluster(t, 3, func(c *Config) { c.MaxLearners = 10 })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := ctxWithName(fmt.Sprintf("l%d", i))
			defer cancel()
			_, err := ms[i%3].client(t).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{fmt.Sprintf("http://127.0.0.1:%d", 40000+i)}, IsLearner: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		waitMembers(t, m, 9, false)
	}
}

// A member restarted on its data comes back with the same membership, without applying
// anything twice; with a small snapshot count it restarts from a snapshot plus log.
func TestRestartFromSnapshotAndLog(t *testing.T) {
	ms := startCluster(t, 3, func(c *Config) { c.SnapshotCount = 3; c.MaxLearners = 10 })
	c := ms[0].client(t)
	for i := range 7 {
		ctx, cancel := ctxWithName(fmt.Sprintf("l%d", i))
		defer cancel()
		r, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{fmt.Sprintf("http://127.0.0.1:%d", 41000+i)}, IsLearner: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: r.Member.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, err := list(c, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := m.stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		m.start(t, m.config("ignored=http://127.0.0.1:1", "existing", nil))
	}
	waitMembers(t, ms[2], len(before.Members), true)
	// A member added now catches up from a snapshot: the log before it is compacted.
	n, _, initial := addMember(t, ms[1].client(t), "late", false)
	n.start(t, n.config(initial, "existing", nil))
	waitMembers(t, n, len(before.Members)+1, false)
}
