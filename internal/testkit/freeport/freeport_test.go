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

// Every port handed out is below the kernel's ephemeral range, where no outgoing connection is
// given its end, when that range leaves room below it.
func TestBelowEphemeral(t *testing.T) {
	eph := ephemeralLow()
	if eph-lowestPort < 1000 {
		t.Skipf("the ephemeral range starts at %d: ports are the kernel's choice", eph)
	}
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < lowestPort || p >= eph {
			t.Errorf("port %d outside [%d, %d)", p, lowestPort, eph)
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
