package portmux

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"time"
)

// Preface is what an HTTP/2 client (every gRPC client on a plain connection) sends first.
const Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Mux hands each connection accepted on a listener to one of its two halves, GRPC and HTTP.
type Mux struct {
	root    net.Listener
	timeout time.Duration
	grpc    *half
	http    *half
	tls     *tlsSplit // nil on a plain listener

	wg        sync.WaitGroup // the accept loop's sniffing goroutines
	mu        sync.Mutex
	sniffing  map[net.Conn]struct{}
	closed    bool
	closeOnce sync.Once
}

// New splits l. A connection that has not shown which half it is for within timeout is closed.
// Call Serve to start accepting.
func New(l net.Listener, timeout time.Duration) *Mux {
	return &Mux{
		root: l, timeout: timeout,
		grpc: newHalf(l.Addr()), http: newHalf(l.Addr()),
		sniffing: map[net.Conn]struct{}{},
	}
}

// GRPC is the listener of the connections that began with HTTP/2's preface.
func (m *Mux) GRPC() net.Listener { return m.grpc }

// HTTP is the listener of every other connection.
func (m *Mux) HTTP() net.Listener { return m.http }

// Serve accepts connections until the listener fails or is closed, then closes the mux and
// returns once no connection is being sniffed any more. It returns nil after Close.
func (m *Mux) Serve() error {
	defer m.wg.Wait()
	defer m.Close()
	var delay time.Duration
	for {
		c, err := m.root.Accept()
		if err != nil {
			if m.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// As net/http does: a temporary failure (out of file descriptors) is waited out.
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if !m.track(c) {
			c.Close()
			return nil
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.route(c)
		}()
	}
}

// route reads c's first bytes and hands it to its half, or closes it.
func (m *Mux) route(c net.Conn) {
	var conn net.Conn
	var isGRPC bool
	var err error
	if m.tls != nil {
		conn, isGRPC, err = m.tls.handshake(c, m.timeout)
	} else {
		var head []byte
		head, isGRPC, err = sniff(c, m.timeout)
		conn = &sniffedConn{Conn: c, head: head}
	}
	m.untrack(c)
	if err != nil {
		c.Close()
		return
	}
	to := m.http
	if isGRPC {
		to = m.grpc
	}
	to.deliver(conn)
}

// sniff reads from c, within timeout, until its bytes either are the whole preface or depart
// from it, and returns them. It never reads past the preface.
func sniff(c net.Conn, timeout time.Duration) (head []byte, isGRPC bool, err error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, false, err
	}
	buf := make([]byte, len(Preface))
	n := 0
	for n < len(buf) && bytes.HasPrefix([]byte(Preface), buf[:n]) {
		k, err := c.Read(buf[n:])
		if err != nil {
			return nil, false, err
		}
		n += k
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, false, err
	}
	return buf[:n], string(buf[:n]) == Preface, nil
}

// Close closes the listener, both halves and every connection still being sniffed.
func (m *Mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		for c := range m.sniffing {
			c.Close()
		}
		m.mu.Unlock()
		err = m.root.Close()
		m.grpc.Close()
		m.http.Close()
	})
	return err
}

func (m *Mux) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// track records c as being sniffed, unless the mux is closed.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.sniffing[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sniffing, c)
}

// half is a listener fed by the mux.
type half struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHalf(addr net.Addr) *half {
	return &half{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver waits for the half's server to accept c, and closes c if the half closes first.
func (h *half) deliver(c net.Conn) {
	select {
	case h.conns <- c:
	case <-h.done:
		c.Close()
	}
}

func (h *half) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *half) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *half) Addr() net.Addr { return h.addr }

// sniffedConn is a connection whose first bytes were read by the mux: it gives them back first.
type sniffedConn struct {
	net.Conn
	head []byte
}

func (c *sniffedConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
