package command

import (
	"testing"
	"time"
)

func TestPromoteRetryAfter(t *testing.T) {
	var fast time.Duration
	for attempt := range promoteFastAttempts {
		if got := promoteRetryAfter(attempt); got != promoteRetry {
			t.Fatalf("attempt %d: wait %v, want %v", attempt, got, promoteRetry)
		}
		fast += promoteRetryAfter(attempt)
	}
	// The fast attempts cover the start of a learner with little to catch up, and no more.
	if fast < 100*time.Millisecond || fast > 500*time.Millisecond {
		t.Errorf("the fast attempts wait %v in all", fast)
	}
	prev := promoteRetry
	for attempt := promoteFastAttempts; attempt < promoteFastAttempts+100; attempt++ {
		got := promoteRetryAfter(attempt)
		if got < prev || got > promoteRetryInterval || (got != 2*prev && got != promoteRetryInterval) {
			t.Fatalf("attempt %d: wait %v after %v: want it doubled, up to %v", attempt, got, prev, promoteRetryInterval)
		}
		prev = got
	}
	if prev != promoteRetryInterval {
		t.Errorf("the wait ends at %v, want %v", prev, promoteRetryInterval)
	}
}
