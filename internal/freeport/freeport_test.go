package freeport

import (
	"net"
	"testing"
)

// Ports and Listen together never hand out a port twice, though every port handed out by Ports
// is closed at once and a closed listener's port is free again for the kernel to return.
func TestDistinct(t *testing.T) {
	seen := map[int]bool{}
	add := func(port int) {
		t.Helper()
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
	for range 20 {
		ports, err := Ports(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			add(p)
		}
		l, err := Listen()
		if err != nil {
			t.Fatal(err)
		}
		add(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
}
