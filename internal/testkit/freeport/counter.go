package freeport

import (
	"net"
	"sync/atomic"
)

// Counter counts the connections its listener accepts and closes each at once: a test's proof
// that a server dialed an address, or never did (a unix socket a stranger named).
type Counter struct {
	l net.Listener
	n atomic.Int32
}

// Counting accepts on l (one from Listen, or a unix socket's) and counts until Close.
func Counting(l net.Listener) *Counter {
	c := &Counter{l: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	return c
}

// Addr is the address listened on: host:port, or the socket's path.
func (c *Counter) Addr() string { return c.l.Addr().String() }

// Count is how many connections were accepted so far.
func (c *Counter) Count() int { return int(c.n.Load()) }

// Close stops listening.
func (c *Counter) Close() error { return c.l.Close() }
