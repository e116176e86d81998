package freeport

import (
	"net"
	"strconv"
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

// Candidates lie below the kernel's ephemeral range, where no outgoing connection is given its
// end, when that range leaves room below it, and are the kernel's choice when it does not; the
// ports Ports hands out on this machine follow the same rule.
func TestBelowEphemeral(t *testing.T) {
	for range 1000 {
		if p := candidate(32768); p < lowestPort || p >= 32768 {
			t.Fatalf("candidate below 32768: %d, want one in [%d, 32768)", p, lowestPort)
		}
	}
	if p := candidate(lowestPort + 999); p != 0 {
		t.Fatalf("candidate below %d: %d, want 0 (the kernel's choice)", lowestPort+999, p)
	}
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	eph := ephemeralLow()
	for _, p := range ports {
		if below := p >= lowestPort && p < eph; below != (candidate(eph) != 0) {
			t.Errorf("port %d handed out with the ephemeral range from %d", p, eph)
		}
	}
}

// Two offsets for one layout share no port, neither shares one with Ports, and each moved port
// can be bound.
func TestOffsetNeverCoincides(t *testing.T) {
	layout := []int{2379, 2380, 22379, 22380}
	seen := map[int]bool{}
	for range 2 {
		off, err := Offset(layout, 1024-2379, 32767-22380)
		if err != nil {
			t.Fatal(err)
		}
		if off == 0 {
			t.Fatal("offset 0: the layout's own ports")
		}
		for _, p := range layout {
			p += off
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Fatalf("moved port %d: %v", p, err)
			}
			l.Close()
		}
	}
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("Ports handed out %d, an offset's", p)
		}
	}
	if _, err := Offset(layout, 0, 0); err == nil {
		t.Error("an offset from the range {0}, which moves nothing")
	}
}
