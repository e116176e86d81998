//go:build crashpoints

package crashpoint

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Armed reports whether this build can arm crash points: true with the crashpoints tag.
const Armed = true

// point is the armed crash point, read from the environment when the program starts.
var point = parse(os.Getenv(EnvVar))

type armedPoint struct {
	name string
	nth  int64
	hits atomic.Int64
}

// parse reads name[:nth]. A name that is not in Names, or a bad nth, arms nothing and says so:
// a test that armed it would otherwise wait for a crash that never comes.
func parse(v string) *armedPoint {
	if v == "" {
		return nil
	}
	name, n, hasN := strings.Cut(v, ":")
	nth := int64(1)
	if hasN {
		var err error
		if nth, err = strconv.ParseInt(n, 10, 64); err != nil || nth < 1 {
			fmt.Fprintf(os.Stderr, "crashpoint: %s=%q: bad count, nothing armed\n", EnvVar, v)
			return nil
		}
	}
	if slices.Contains(Names, name) {
		fmt.Fprintf(os.Stderr, "crashpoint: %s armed at hit %d\n", name, nth)
		return &armedPoint{name: name, nth: nth}
	}
	fmt.Fprintf(os.Stderr, "crashpoint: %s=%q: no such crash point, nothing armed\n", EnvVar, v)
	return nil
}

// Hit kills the process if name is the armed point and this is its nth hit.
func Hit(name string) {
	p := point
	if p == nil || p.name != name {
		return
	}
	if n := p.hits.Add(1); n == p.nth {
		fmt.Fprintf(os.Stderr, "crashpoint: %s hit %d: SIGKILL\n", name, n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously: nothing after the point may run
	}
}

// HitIf is Hit when cond holds.
func HitIf(cond bool, name string) {
	if cond {
		Hit(name)
	}
}
