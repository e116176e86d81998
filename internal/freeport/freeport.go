package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

var (
	portsMu sync.Mutex
	// handedOut holds every port returned in this test binary.
	handedOut = map[int]bool{}
)

// maxPortAttempts bounds the search for unused ports; a loopback interface that cannot give a
// few dozen distinct ports is broken, and looping further would hide that.
const maxPortAttempts = 1000

// Ports returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. They are
// found by binding to port 0; all listeners stay open until n are found so the kernel cannot
// return one twice.
func Ports(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; len(ports) < n; i++ {
		if i >= maxPortAttempts {
			return nil, fmt.Errorf("found only %d free ports in %d attempts", len(ports), i)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			continue
		}
		handedOut[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// Offset returns an offset in [lo, hi], not 0, by which every one of ports, moved, was free a
// moment ago and none was handed out before in this test binary; the moved ports are then
// handed out. It is for a program that takes one offset for a fixed layout of ports (the
// runbooks' PORT_OFFSET). Two offsets it returns never share a port. The candidates are tried
// in a random order, each bound in full before the next.
func Offset(ports []int, lo, hi int) (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for i, off := range rand.Perm(hi - lo + 1) {
		if i >= maxPortAttempts {
			break
		}
		off += lo
		if off == 0 {
			continue
		}
		if moved, ok := bindAll(ports, off); ok {
			for _, p := range moved {
				handedOut[p] = true
			}
			return off, nil
		}
	}
	return 0, fmt.Errorf("no offset from %d to %d leaves all %d ports free", lo, hi, len(ports))
}

// bindAll reports whether every port of ports moved by off is from 1024 to 65535, not handed
// out, and can be bound on 127.0.0.1 now; the listeners are closed before it returns.
func bindAll(ports []int, off int) ([]int, bool) {
	var moved []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for _, p := range ports {
		p += off
		if p < 1024 || p > 65535 || handedOut[p] {
			return nil, false
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return nil, false
		}
		listeners = append(listeners, l)
		moved = append(moved, p)
	}
	return moved, true
}
