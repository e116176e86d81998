// Package h2probe speaks just enough HTTP/2 to make one gRPC call, or to answer one, over a bare
// connection, and counts the PING frames the other side sends meanwhile. Tests use it to check
// that a gRPC connection has a fixed flow-control window: grpc's default, dynamic window pings
// the sender whenever data arrives.
//
// Invariants:
//   - Every frame the other side sends is read in order and answered as HTTP/2 requires
//     (settings and pings acknowledged), so the other side never waits on the probe.
//   - Call counts the server's pings until the call's trailers: a server queues the ping for a
//     request's data before its handler can read that data, so before it can answer. Answer
//     counts the client's pings until the client ends the connection: a client queues the ping
//     for the answer's data before the call returns, so before it can close.
//   - Nothing waits without the connection's deadline, which the caller sets.
package h2probe
