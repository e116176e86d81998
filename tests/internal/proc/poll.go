package proc

import (
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
		time.Sleep(interval)
		if interval < 200*time.Millisecond {
			interval = interval * 3 / 2
		}
	}
}
