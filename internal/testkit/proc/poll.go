package proc

import (
	"context"
	"fmt"
	"time"
)

// Poll calls cond until it reports done, it returns an error that is final, or timeout passes.
// The interval starts small, because on loopback most conditions hold within milliseconds, and
// grows to 200 ms so a slow machine is not flooded with probes. The number of calls is bounded
// by the timeout: every call is followed by a wait of at least 10 ms.
//
// cond returns (true, nil) when the condition holds, (false, err) to retry with err remembered
// as the reason, and (true, err) to stop at once with err.
func Poll(timeout time.Duration, what string, cond func() (bool, error)) error {
	return PollContext(context.Background(), timeout, what, cond)
}

// PollContext is Poll that also stops, with ctx's cause, as soon as ctx is done: a program that
// is interrupted (the bench on SIGINT) does not wait out the timeout.
func PollContext(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	interval := 10 * time.Millisecond
	var last error
	for attempt := 1; ; attempt++ {
		done, err := cond()
		if done {
			return err
		}
		last = err
		if time.Now().Add(interval).After(deadline) {
			if last == nil {
				return fmt.Errorf("%s: not done after %v (%d attempts)", what, timeout, attempt)
			}
			return fmt.Errorf("%s: not done after %v (%d attempts): %w", what, timeout, attempt, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		case <-time.After(interval):
		}
		if interval < 200*time.Millisecond {
			interval = interval * 3 / 2
		}
	}
}
