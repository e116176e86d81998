package logfmt

import (
	"fmt"
	"testing"
	"time"
)

// A key's line passes once per interval, then says how many were held back; the memory stays
// within its bound whatever the flood; an interval of zero lets each key through once.
func TestLimiter(t *testing.T) {
	l := NewLimiter(time.Minute, 8)
	at := time.Unix(1000, 0)
	if ok, n := l.Allow("a", at); !ok || n != 0 {
		t.Fatalf("first: %v %d", ok, n)
	}
	for range 3 {
		if ok, _ := l.Allow("a", at.Add(time.Second)); ok {
			t.Fatal("again within the interval")
		}
	}
	if ok, n := l.Allow("a", at.Add(time.Minute)); !ok || n != 3 {
		t.Fatalf("after the interval: %v %d, want true 3", ok, n)
	}
	for i := range 100 {
		l.Allow(fmt.Sprint(i), at.Add(time.Duration(i)*time.Second))
		if len(l.seen) > 8 {
			t.Fatalf("remembers %d keys, bound is 8", len(l.seen))
		}
	}
	once := NewLimiter(0, 8)
	if ok, _ := once.Allow("a", at); !ok {
		t.Fatal("first")
	}
	if ok, _ := once.Allow("a", at.Add(time.Hour)); ok {
		t.Fatal("an interval of zero let a key through twice")
	}
}
