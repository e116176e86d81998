package chaos

import (
	"net"
	"os"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
)

// TestSourcesOfAConnection: the proxy finds the process that dialed it, here this test's own,
// learns every connection open at once in one scan, and forgets one as it closes.
func TestSourcesOfAConnection(t *testing.T) {
	ln, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		accepted = append(accepted, a)
	}

	stranger := &sources{pids: func() map[int]int { return nil }, known: map[[2]int]int{}}
	if _, slot := stranger.of(accepted[0]); slot != -1 {
		t.Errorf("a connection from no member's process: slot %d, want -1", slot)
	}

	scans := 0
	s := &sources{known: map[[2]int]int{}}
	s.pids = func() map[int]int { scans++; return map[int]int{os.Getpid(): 7} }
	for i, a := range accepted {
		key, slot := s.of(a)
		if slot != 7 {
			t.Errorf("connection %d: slot %d, want 7", i, slot)
		}
		if i == 0 {
			s.forget(key)
			if _, ok := s.get(key); ok {
				t.Errorf("connection %d is still known after it was forgotten", i)
			}
		}
	}
	if scans != 1 {
		t.Errorf("%d scans for three connections open at once, want 1", scans)
	}
}
