package freeport

import (
	"fmt"
	"net"
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
