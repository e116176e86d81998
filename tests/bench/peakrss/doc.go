// Command peakrss runs a command and prints the command's peak resident set, in KiB, as one
// line on its stdout; the command's own output goes to peakrss's stderr.
//
// `make bench` measures the peak memory of CLI processes through it because it cannot read
// that figure for its own children: Go starts a child with a clone that shares the parent's
// address space until exec, and Linux carries that address space's high-water mark into the
// child's ru_maxrss at exec. Every child of the bench would report at least the bench's own
// resident set. Started from this small process instead, a child reports its own peak, or
// peakrss's resident set (about 2 MiB) if that is larger: the smallest figure it can measure.
//
// Guarantees:
//   - Exits with the command's exit status (1 if it was killed), 2 on bad usage; it prints the
//     figure only when the command exited 0.
package main
