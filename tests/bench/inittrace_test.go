package main

import (
	"math"
	"testing"
)

func TestParseInitTrace(t *testing.T) {
	out := "init runtime @0.017 ms, 0.073 ms clock, 0 bytes, 0 allocs\n" +
		"clusterctl: something else on stderr\n" +
		"init google.golang.org/grpc @2.7 ms, 0.15 ms clock, 28376 bytes, 476 allocs\n" +
		"init google.golang.org/grpc @2.9 ms, 0.05 ms clock, 16 bytes, 1 allocs\n"
	total, per, err := parseInitTrace(out)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(total-0.273) > 1e-9 || len(per) != 2 || math.Abs(per["google.golang.org/grpc"]-0.2) > 1e-9 {
		t.Fatalf("total %v, per %v", total, per)
	}
	if _, _, err := parseInitTrace("Error: no inittrace here\n"); err == nil {
		t.Fatal("no lines: no error")
	}
}
