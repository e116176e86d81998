// Package freeport hands out TCP ports on 127.0.0.1 for tests that start servers, in process or
// as real processes: Ports for a server that binds its port later, Listen for one the test runs
// itself. Every harness that picks a port takes it here. Counting counts who dials a listener.
//
// Offset gives one offset for a fixed layout of ports (a script's PORT_OFFSET), every moved
// port free.
//
// Invariant: no port is handed out twice in one process, by Ports, Listen and Offset together.
// The kernel may return a port that was just closed, and two servers of one test given the same
// port (a member's client URL and the proxy in front of its peer port, say) make one of them
// answer for the other, or fail to start.
//
// Invariant: a port handed out lies below the kernel's ephemeral range (where the range leaves
// room for one), so that no outgoing connection on the machine takes it while its member is
// down: a member killed and started again on its own URLs finds them free.
package freeport
