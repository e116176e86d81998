package main

import (
	"math"
	"slices"
	"time"
)

// samples are the measured values of one figure, in milliseconds (or MiB for memory).
type samples []float64

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median is the middle value, or the mean of the two middle values of an even count.
func (s samples) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := slices.Sorted(slices.Values(s))
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

// p99 is the nearest-rank 99th percentile: the smallest value at least 99% of the samples are
// not above. With fewer than 100 samples it is the maximum, which the report says.
func (s samples) p99() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := slices.Sorted(slices.Values(s))
	rank := int(math.Ceil(0.99 * float64(len(c))))
	return c[max(rank, 1)-1]
}

func (s samples) max() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Max(s)
}
