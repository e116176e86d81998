package servertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// ElectionTimeout is the members' election timeout unless a tweak sets another: a leader counts
// a member that has been silent this long as gone. Half a second, ten heartbeats, as etcd's
// defaults are ten: long enough that a machine slowed by the race detector and other tests does
// not make a live member look gone to the strict reconfiguration check, short enough that a
// cluster elects its first leader in about a second.
const ElectionTimeout = 500 * time.Millisecond

// Token is the members' --initial-cluster-token.
const Token = "test"

// WaitTimeout bounds the harness's own waits, and is the bound tests give Eventually unless they
// need another. Members on loopback elect and catch up in tens of milliseconds; the bound is for
// a loaded machine running several test binaries.
const WaitTimeout = 10 * time.Second

// Member is one in-process clusterd: its fixed addresses and data dir, and its latest run.
type Member struct {
	Name      string
	Dir       string // data dir, inside the test's t.TempDir()
	PeerURL   string // http://127.0.0.1:PORT
	ClientURL string // http://127.0.0.1:PORT

	cancel context.CancelFunc
	done   chan error // holds Run's result once it returned
}

// ClientAddr returns the client address in the host:port form --endpoints takes.
func (m *Member) ClientAddr() string { return strings.TrimPrefix(m.ClientURL, "http://") }

// FreeAddr returns an address on 127.0.0.1 no other member of this test binary is given. Nothing
// listens there until a member is started on it, so it also serves as an endpoint that refuses
// connections.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

// NewMember gives a member its ports and data dir. Nothing is started and the data dir is not
// created: creating it is the server's job.
func NewMember(t testing.TB, name string) *Member {
	t.Helper()
	return &Member{Name: name, Dir: filepath.Join(t.TempDir(), name),
		PeerURL: "http://" + FreeAddr(t), ClientURL: "http://" + FreeAddr(t)}
}

// Config returns the member's configuration for the given --initial-cluster and
// --initial-cluster-state, changed by tweak when it is not nil.
func (m *Member) Config(initial, state string, tweak func(*server.Config)) server.Config {
	cfg := server.Config{
		Name: m.Name, DataDir: m.Dir,
		ListenClientURLs: []string{m.ClientURL}, AdvertiseClientURLs: []string{m.ClientURL},
		ListenPeerURLs: []string{m.PeerURL}, InitialAdvertisePeerURLs: []string{m.PeerURL},
		InitialCluster: initial, InitialClusterState: state, InitialClusterToken: Token,
		HeartbeatInterval: 50 * time.Millisecond, ElectionTimeout: ElectionTimeout,
		SnapshotCount: 10000, StrictReconfigCheck: true, MaxLearners: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return cfg
}

// Start runs the member with cfg until Stop or the end of the test. It does not wait for the
// member to serve: see WaitMembers.
func (m *Member) Start(t testing.TB, cfg server.Config) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan error, 1)
	go func() {
		err := srv.Run(ctx)
		if ctx.Err() == nil {
			// Exited by itself: a test that then waits for the member in vain shows why.
			// Logged before done is sent, so before Stop (and the test's cleanup) returns.
			t.Logf("%s exited: %v", m.Name, err)
		}
		m.done <- err
	}()
	t.Cleanup(func() { _ = m.Stop() })
}

// Stop cancels the member's run and returns what Run returned. It may be called again, and on a
// member that already exited by itself.
func (m *Member) Stop() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(WaitTimeout):
		return fmt.Errorf("%s did not stop within %v", m.Name, WaitTimeout)
	}
}

// Exited waits up to within for Run to return by itself, and returns what it returned.
func (m *Member) Exited(t testing.TB, within time.Duration) error {
	t.Helper()
	if m.done == nil {
		t.Fatalf("%s was never started", m.Name)
	}
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v", m.Name, within)
		return nil
	}
}

// Client returns a Cluster client of the member's client URL, closed when the test ends.
func (m *Member) Client(t testing.TB) pb.ClusterClient {
	t.Helper()
	conn, err := m.dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewClusterClient(conn)
}

func (m *Member) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+m.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// InitialCluster returns name=peerURL of each member, joined by commas.
func InitialCluster(ms []*Member) string {
	return join(ms, func(m *Member) string { return m.Name + "=" + m.PeerURL })
}

// Endpoints returns the members' client addresses joined by commas, the form --endpoints takes.
func Endpoints(ms []*Member) string { return join(ms, (*Member).ClientAddr) }

func join(ms []*Member, f func(*Member) string) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = f(m)
	}
	return strings.Join(parts, ",")
}

// Start starts n members m0..m<n-1> as a new cluster, each configuration changed by tweak when it
// is not nil, and waits until every one lists all n linearizably.
func Start(t testing.TB, n int, tweak func(*server.Config)) []*Member {
	t.Helper()
	ms := make([]*Member, n)
	for i := range ms {
		ms[i] = NewMember(t, fmt.Sprintf("m%d", i))
	}
	initial := InitialCluster(ms)
	for _, m := range ms {
		m.Start(t, m.Config(initial, "new", tweak))
	}
	for _, m := range ms {
		WaitMembers(t, m, n, true)
	}
	return ms
}

// List asks c for the member list, linearizably or from the member's own applied state.
func List(c pb.ClusterClient, linearizable bool) (*pb.MemberListResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.MemberList(ctx, &pb.MemberListRequest{Linearizable: linearizable})
}

// WaitMembers waits until m lists n members (linearizably or from its own applied state). Each
// try dials afresh: a connection that failed while the member was starting would wait out
// gRPC's reconnect backoff, seconds after the member is serving.
func WaitMembers(t testing.TB, m *Member, n int, linearizable bool) {
	t.Helper()
	Eventually(t, WaitTimeout, func() error {
		conn, err := m.dial()
		if err != nil {
			return err
		}
		defer conn.Close()
		r, err := List(pb.NewClusterClient(conn), linearizable)
		if err == nil && len(r.Members) != n {
			err = fmt.Errorf("%s lists %d members, want %d", m.Name, len(r.Members), n)
		}
		return err
	})
}

// pollInterval is the pause between two tries of a condition: short, since on loopback most
// conditions hold within milliseconds, and long enough not to flood a loaded machine.
const pollInterval = 20 * time.Millisecond

// Poll calls f until it returns nil or within has passed, and returns nil or f's last error. It
// does not touch the test, so it may run in a goroutine of its own.
func Poll(within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().Add(pollInterval).After(deadline) {
			return fmt.Errorf("still failing after %v: %w", within, err)
		}
		time.Sleep(pollInterval)
	}
}

// Eventually is Poll that fails the test when f still fails at the deadline.
func Eventually(t testing.TB, within time.Duration, f func() error) {
	t.Helper()
	if err := Poll(within, f); err != nil {
		t.Fatal(err)
	}
}

// Counter returns the value of series (its name and labels, as a /metrics page writes them) on
// the page metrics, and whether the page has it.
func Counter(metrics, series string) (int, bool) {
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// LogBuffer is a log sink a member and the test may touch at once: give a member
// slog.New(slog.NewTextHandler(buf, nil)) and read its lines with String.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
