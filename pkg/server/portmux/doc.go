// Package portmux splits one listener between gRPC and HTTP/1, as etcd splits its client port
// with cmux: a connection whose first bytes are HTTP/2's client preface is gRPC's, any other is
// HTTP/1's (/metrics, /health). It does this at the connection, before either server sees a
// byte, so a gRPC call runs on grpc.Server's own transport exactly as on a listener of its own
// (grpc.Server.ServeHTTP, the other way to share a port, runs every call on Go's HTTP/2 server,
// a slower path).
//
// Invariants:
//   - A connection is read only until its first bytes decide it: at most the preface's 24
//     bytes, and an HTTP/1 request is told from the preface at its first or second byte. What
//     was read is handed on in front of the rest, so neither server misses a byte.
//   - The sniff is bounded by a deadline: a connection that sends nothing (or too little) in
//     that time is closed. Nothing else waits on a connection, so the accept loop never stalls.
//   - Close closes the listener, both halves and every connection still being sniffed, and Serve
//     returns once every goroutine of the mux has ended. Closing one half (a server that stops)
//     leaves the other serving; what would go to a closed half is closed.
package portmux
