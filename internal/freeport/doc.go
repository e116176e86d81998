// Package freeport hands out TCP ports on 127.0.0.1 for tests that start servers, in process or
// as real processes.
//
// Ports gives any free ports; Offset gives one offset for a fixed layout of ports (a script's
// PORT_OFFSET), every moved port free.
//
// Invariant: no port is handed out twice in one test binary, by either. The kernel may return a port that
// was just closed, and two listeners of one test given the same port make one of them answer
// for the other.
package freeport
