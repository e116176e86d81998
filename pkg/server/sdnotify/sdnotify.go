package sdnotify

import (
	"fmt"
	"net"
	"os"
	"sync"
)

// Notifier sends the member's state to systemd. The zero value, like one made without a
// socket, sends nothing. Safe for concurrent use.
type Notifier struct {
	socket string // the socket's path, or an abstract name starting with @; "" for none

	mu       sync.Mutex
	ready    bool
	stopping bool
}

// FromEnv returns a Notifier for the socket in $NOTIFY_SOCKET, which systemd sets for a
// Type=notify service.
func FromEnv() *Notifier { return New(os.Getenv("NOTIFY_SOCKET")) }

// New returns a Notifier for socket; "" makes one that sends nothing.
func New(socket string) *Notifier { return &Notifier{socket: socket} }

// Ready sends READY=1, the first time it is called and only if Stopping has not been.
func (n *Notifier) Ready() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ready || n.stopping {
		return nil
	}
	n.ready = true
	return n.send("READY=1")
}

// Stopping sends STOPPING=1, the first time it is called; nothing is sent after it. Call it as
// soon as shutdown begins, so that systemd reports the unit as deactivating rather than
// failed while the member closes its listeners and its store.
func (n *Notifier) Stopping() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return nil
	}
	n.stopping = true
	return n.send("STOPPING=1")
}

// send writes one datagram. A new connection each time, as systemd's own sd_notify does: the
// socket is systemd's, it may be recreated when systemd re-executes, and a state is sent a
// handful of times in a process's life.
func (n *Notifier) send(state string) error {
	if n.socket == "" {
		return nil
	}
	// Go's unix addresses take a leading @ as Linux's abstract namespace, which is how
	// systemd names an abstract notify socket.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}
