package observe

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// notifySocket is a socket in systemd's place: it collects what a member sends to
// $NOTIFY_SOCKET.
type notifySocket struct {
	path   string
	states chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	// A socket path must fit in 108 bytes, which t.TempDir() may not.
	dir, err := os.MkdirTemp("", "notify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &notifySocket{path: filepath.Join(dir, "s"), states: make(chan string, 8)}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.states <- string(buf[:n])
		}
	}()
	return s
}

func (s *notifySocket) want(t *testing.T, who, state string, within time.Duration) {
	t.Helper()
	select {
	case got := <-s.states:
		if got != state {
			t.Fatalf("%s sent %q, want %q", who, got, state)
		}
	case <-time.After(within):
		t.Fatalf("%s sent no %s within %v", who, state, within)
	}
}

func (s *notifySocket) none(t *testing.T, who string, during time.Duration) {
	t.Helper()
	select {
	case got := <-s.states:
		t.Fatalf("%s sent %q too early", who, got)
	case <-time.After(during):
	}
}

// A member is not ready while it cannot have joined (alone of three, no majority), is ready
// once a second member gives the cluster a majority, and says it is stopping on SIGTERM.
func TestReadyOnlyAfterJoin(t *testing.T) {
	c := newCluster(t)
	names := []string{"infra0", "infra1", "infra2"}
	var ms []*cluster.Member
	for _, n := range names {
		m, err := c.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	ic := cluster.InitialCluster(ms)
	sockets := map[string]*notifySocket{}
	start := func(name string) {
		m, err := c.Member(name)
		if err != nil {
			t.Fatal(err)
		}
		sockets[name] = listenNotify(t)
		args := append(m.BaseArgs(), "--initial-cluster="+ic, "--initial-cluster-state=new",
			"--initial-cluster-token="+c.Config().Token)
		if err := c.Start(name, args, []string{"NOTIFY_SOCKET=" + sockets[name].path}); err != nil {
			t.Fatal(err)
		}
	}

	start("infra0")
	// Several election timeouts: long enough for a READY that did not wait for the join.
	sockets["infra0"].none(t, "infra0 alone", 3*time.Second)
	start("infra1")
	sockets["infra0"].want(t, "infra0", "READY=1", 20*time.Second)
	sockets["infra1"].want(t, "infra1", "READY=1", 20*time.Second)

	if err := c.Signal("infra0", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sockets["infra0"].want(t, "infra0", "STOPPING=1", 10*time.Second)
	if _, err := c.WaitExit("infra0", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	sockets["infra0"].none(t, "infra0 after STOPPING", 200*time.Millisecond)
}
