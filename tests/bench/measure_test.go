package main

import (
	"testing"
	"time"
)

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ats := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, at(m))
		}
		return ts
	}
	for _, c := range []struct {
		name           string
		ok             []int // ms after the loop began
		answered, end  int
		wantGap, wantF int // ms, and when the gap began
		wantErr        bool
	}{
		{name: "gap in the middle", ok: []int{10, 20, 30, 130, 140, 150}, answered: 100, end: 160, wantGap: 100, wantF: 30},
		{name: "the loop's start to the first success", ok: []int{50, 60, 70}, answered: 55, end: 80, wantGap: 50, wantF: 0},
		{name: "trailing gap: lists stopped succeeding", ok: []int{10, 20, 110}, answered: 100, end: 400, wantGap: 290, wantF: 110},
		{name: "trailing gap beats a middle one", ok: []int{10, 90, 120}, answered: 100, end: 220, wantGap: 100, wantF: 120},
		{name: "no success after the removal", ok: []int{10, 20, 30}, answered: 100, end: 400, wantGap: 370, wantF: 30, wantErr: true},
		{name: "a success at the answer is not after it", ok: []int{10, 100}, answered: 100, end: 120, wantGap: 90, wantF: 10, wantErr: true},
		{name: "no success at all", answered: 100, end: 400, wantGap: 400, wantF: 0, wantErr: true},
	} {
		gap, from, err := longestGap(t0, ats(c.ok...), at(c.answered), at(c.end))
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want one: %v", c.name, err, c.wantErr)
		}
		if gap != time.Duration(c.wantGap)*time.Millisecond || !from.Equal(at(c.wantF)) {
			t.Errorf("%s: gap %v from %v, want %d ms from %d ms", c.name, gap, from.Sub(t0), c.wantGap, c.wantF)
		}
	}
}
