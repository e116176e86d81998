package main

import (
	"math"
	"math/rand/v2"
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

// medianRatioInterval is a 90% percentile-bootstrap interval for a.median()/b.median(): the
// ratio of medians of 2,000 resamplings of each series, their 5th and 95th percentiles. It says
// how far the ratio of one run of a few dozen samples could be from the ratio the machine would
// give over many, so that a ratio is read against its target with that spread in view. Seeded,
// so the same samples give the same interval.
func medianRatioInterval(a, b samples) (lo, hi float64) {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN(), math.NaN()
	}
	const resamples = 2000
	rng := rand.New(rand.NewPCG(1, 2))
	resample := func(s samples, into samples) float64 {
		for i := range into {
			into[i] = s[rng.IntN(len(s))]
		}
		return into.median()
	}
	ra, rb := make(samples, len(a)), make(samples, len(b))
	ratios := make([]float64, resamples)
	for i := range ratios {
		ratios[i] = resample(a, ra) / resample(b, rb)
	}
	slices.Sort(ratios)
	return ratios[resamples*5/100], ratios[resamples*95/100-1]
}
