package sdnotify

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// listen opens a notify socket of the test's own, as systemd would, and returns its name and a
// function that returns every datagram received so far, in order.
func listen(t *testing.T, name string) (string, func() []string) {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	var got []string
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, string(buf[:n]))
			mu.Unlock()
		}
	}()
	// received waits until the reader has taken every datagram already sent: a datagram
	// written to a unix socket is queued when Write returns, so the count stops growing.
	received := func() []string {
		deadline := time.Now().Add(2 * time.Second)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			stable := n == len(got)
			out := slices.Clone(got)
			mu.Unlock()
			if stable || time.Now().After(deadline) {
				return out
			}
		}
	}
	return name, received
}

func TestReadyOnceThenStopping(t *testing.T) {
	sock, received := listen(t, filepath.Join(t.TempDir(), "notify"))
	t.Setenv("NOTIFY_SOCKET", sock)
	n := FromEnv()
	if got := received(); len(got) != 0 {
		t.Fatalf("sent %q before being told", got)
	}
	for range 3 {
		if err := n.Ready(); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Stopping(); err != nil {
		t.Fatal(err)
	}
	// Nothing after STOPPING=1: neither a late READY nor a second STOPPING.
	if err := n.Ready(); err != nil {
		t.Fatal(err)
	}
	if err := n.Stopping(); err != nil {
		t.Fatal(err)
	}
	if got, want := received(), []string{"READY=1", "STOPPING=1"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// TestStoppingBeforeReady: a member that shuts down before it was ready (its join failed)
// says so, and is never announced ready.
func TestStoppingBeforeReady(t *testing.T) {
	sock, received := listen(t, filepath.Join(t.TempDir(), "notify"))
	n := New(sock)
	if err := n.Stopping(); err != nil {
		t.Fatal(err)
	}
	if err := n.Ready(); err != nil {
		t.Fatal(err)
	}
	if got, want := received(), []string{"STOPPING=1"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// TestAbstractSocket: systemd may name an abstract socket, @ first.
func TestAbstractSocket(t *testing.T) {
	sock, received := listen(t, "@clusterd-sdnotify-test-"+filepath.Base(t.TempDir()))
	if err := New(sock).Ready(); err != nil {
		t.Fatal(err)
	}
	if got, want := received(), []string{"READY=1"}; !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

func TestNoSocketIsNoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	for _, n := range []*Notifier{FromEnv(), New(""), {}} {
		if err := n.Ready(); err != nil {
			t.Errorf("Ready without a socket: %v", err)
		}
		if err := n.Stopping(); err != nil {
			t.Errorf("Stopping without a socket: %v", err)
		}
	}
}

// TestSocketGone: systemd went away; the error says which state was lost, for the log.
func TestSocketGone(t *testing.T) {
	err := New(filepath.Join(t.TempDir(), "absent")).Ready()
	if err == nil || !strings.Contains(err.Error(), "READY=1") {
		t.Fatalf("Ready to a missing socket: %v, want an error naming READY=1", err)
	}
}
