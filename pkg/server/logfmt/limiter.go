package logfmt

import (
	"sync"
	"time"
)

// Limiter decides when a line that peers can make a member repeat (a refused handshake, a
// refused or disbelieved peer call) is written: at most once per interval for each key, with how
// many were held back since the last one. It remembers at most max keys, so that a flood from
// many addresses cannot grow it: past that, the keys whose interval has ended are forgotten, then
// all of them.
type Limiter struct {
	every time.Duration
	max   int

	mu   sync.Mutex
	seen map[string]*limited
}

type limited struct {
	written    time.Time
	suppressed int
}

// NewLimiter lets a key's line through once per every; every <= 0 lets each key through once
// for the life of the process.
func NewLimiter(every time.Duration, max int) *Limiter {
	return &Limiter{every: every, max: max, seen: map[string]*limited{}}
}

// Allow reports whether the line for key may be written at now, and if so how many lines for
// key were held back since the last one written.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.seen[key]
	if e != nil && (l.every <= 0 || now.Sub(e.written) < l.every) {
		e.suppressed++
		return false, 0
	}
	if e != nil {
		suppressed = e.suppressed
	} else if len(l.seen) >= l.max {
		for k, e := range l.seen {
			if l.every > 0 && now.Sub(e.written) >= l.every {
				delete(l.seen, k)
			}
		}
		if len(l.seen) >= l.max {
			clear(l.seen)
		}
	}
	l.seen[key] = &limited{written: now}
	return true, suppressed
}
