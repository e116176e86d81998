package freeport

import (
	"net"
	"strconv"
	"testing"
)

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
