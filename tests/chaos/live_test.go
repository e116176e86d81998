package chaos

import (
	"testing"
	"time"
)

// A process may count as live while it runs, for killNoticed after it ends, and for an election
// timeout (plus killNoticed) into a pause; never before it starts.
func TestMayCount(t *testing.T) {
	const election = 500 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := &process{started: at(0), exitedAt: at(10000),
		paused: []window{{from: at(2000), to: at(5000)}, {from: at(8000)}}}
	for _, tt := range []struct {
		a, b int
		want bool
	}{
		{-500, -100, false},   // before it started
		{-500, 100, true},     // it started meanwhile
		{1000, 1500, true},    // running
		{2100, 2600, true},    // paused less than an election timeout (and the margin) ago
		{2800, 4900, false},   // paused long enough all along
		{2800, 5100, true},    // resumed meanwhile
		{8800, 9900, false},   // paused again, long enough, until it was killed
		{10100, 10200, false}, // ended, and silent long before
	} {
		if got := p.mayCount(at(tt.a), at(tt.b), election); got != tt.want {
			t.Errorf("[%d ms, %d ms]: %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	running := &process{started: at(0)}
	if !running.mayCount(at(100), at(200), election) {
		t.Error("a running process does not count")
	}
	killed := &process{started: at(0), exitedAt: at(1000)}
	if !killed.mayCount(at(1100), at(1200), election) || killed.mayCount(at(1300), at(1400), election) {
		t.Error("an ended process counts for killNoticed after its end, and not after")
	}
}
