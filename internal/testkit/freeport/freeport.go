package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	portsMu sync.Mutex
	// handedOut holds every port handed out in this process, by Ports, Listen or Offset.
	handedOut = map[int]bool{}
)

// maxPortAttempts bounds the search for unused ports; a loopback interface that cannot give a
// few dozen distinct ports is broken, and looping further would hide that.
const maxPortAttempts = 1000

// Ports returns n distinct TCP ports on 127.0.0.1 that were free a moment ago, for servers that
// bind them later (real processes, members restarted on the same port).
func Ports(n int) ([]int, error) {
	ls, err := take(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, l := range ls {
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports, nil
}

// Listen returns a listener on 127.0.0.1, for a server the test runs in its own process (a
// proxy, a fake peer), on a port no call of Ports or Listen in this process handed out: a port
// given to a process that has not bound it yet, or to a member that is restarting, is never
// also a listener's.
func Listen() (net.Listener, error) {
	ls, err := take(1)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// lowestPort is where candidate's range starts: above the well-known and the usual fixed ports
// of servers (etcd's 2379 and 2380 among them).
const lowestPort = 10000

// candidate is a port to try: one at random below eph, the first port of the kernel's ephemeral
// range, which the kernel never gives an outgoing connection, so that a member restarted on its
// port finds it free (any process's connection could otherwise have taken it as its own end
// meanwhile); 0, the kernel's choice, where that range leaves fewer than a thousand ports below
// it.
func candidate(eph int) int {
	if eph-lowestPort >= 1000 {
		return lowestPort + rand.IntN(eph-lowestPort)
	}
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default where it
// cannot be read), read once: it is the machine's setting, not a port's state.
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	low, err := strconv.Atoi(strings.Fields(string(b) + " x")[0])
	if err != nil {
		return 32768
	}
	return low
})

// take returns n listeners on ports never handed out before in this process, and marks those
// ports handed out. The listeners it passes over stay open until n are found, so that the kernel
// cannot return one of them again.
func take(n int) ([]net.Listener, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	eph := ephemeralLow()
	var taken, passed []net.Listener
	defer func() {
		for _, l := range passed {
			l.Close()
		}
	}()
	for i := 0; len(taken) < n; i++ {
		if i >= maxPortAttempts {
			passed = append(passed, taken...)
			return nil, fmt.Errorf("found only %d free ports in %d attempts", len(taken), i)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(candidate(eph)))
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			passed = append(passed, taken...)
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			passed = append(passed, l)
			continue
		}
		taken = append(taken, l)
	}
	for _, l := range taken {
		handedOut[l.Addr().(*net.TCPAddr).Port] = true
	}
	return taken, nil
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
