package main

import (
	"math"
	"testing"
)

func TestStats(t *testing.T) {
	// seq returns 1, 2, ..., n in reverse order, so the code under test has to sort.
	seq := func(n int) samples {
		s := make(samples, n)
		for i := range s {
			s[i] = float64(n - i)
		}
		return s
	}
	for _, c := range []struct {
		name             string
		s                samples
		median, p99, max float64
	}{
		{"one", samples{4}, 4, 4, 4},
		{"odd count: the middle value", samples{9, 1, 5}, 5, 9, 9},
		{"even count: mean of the two middle values", samples{8, 2, 4, 6}, 5, 8, 8},
		// Nearest rank: ceil(0.99 n) is n below 100 samples, so p99 is the maximum.
		{"99 samples", seq(99), 50, 99, 99},
		{"100 samples: the 99th value", seq(100), 50.5, 99, 100},
		// 198 of 200 samples are at or below the 198th value: it is the 3rd largest.
		{"200 samples: the 198th value", seq(200), 100.5, 198, 200},
		{"201 samples: ceil(198.99) = 199th", seq(201), 101, 199, 201},
	} {
		if got := c.s.median(); got != c.median {
			t.Errorf("%s: median %v, want %v", c.name, got, c.median)
		}
		if got := c.s.p99(); got != c.p99 {
			t.Errorf("%s: p99 %v, want %v", c.name, got, c.p99)
		}
		if got := c.s.max(); got != c.max {
			t.Errorf("%s: max %v, want %v", c.name, got, c.max)
		}
	}
	// No samples: NaN, which the table prints as "-" and the JSON as null.
	var none samples
	for name, v := range map[string]float64{"median": none.median(), "p99": none.p99(), "max": none.max()} {
		if !math.IsNaN(v) {
			t.Errorf("%s of no samples: %v, want NaN", name, v)
		}
	}
	// The statistics sort a copy: the caller's order (run order, for drift) stays.
	s := samples{3, 1, 2}
	s.median()
	s.p99()
	if s[0] != 3 || s[1] != 1 || s[2] != 2 {
		t.Errorf("samples reordered to %v", s)
	}
}
