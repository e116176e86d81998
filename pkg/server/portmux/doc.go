// Package portmux splits one listener between gRPC and HTTP, as etcd splits its client port
// with cmux: a connection whose first bytes are HTTP/2's client preface is gRPC's, any other is
// HTTP/1's (/metrics, /health). It does this at the connection, before either server sees a
// byte, so a gRPC call runs on grpc.Server's own transport exactly as on a listener of its own
// (grpc.Server.ServeHTTP, the other way to share a port, runs every call on Go's HTTP/2 server,
// a slower path).
//
// Over TLS (NewTLS) the mux terminates TLS itself, with the port's tls.Config, so that what it
// hands on is readable: the ALPN protocol the client offered and got decides instead of the
// preface. A gRPC client (h2 offered without http/1.1) goes to GRPC as a handshaken *tls.Conn,
// whose server takes it as it is (servertls.Terminated) and still sees the verified chain in
// the peer's AuthInfo; every other client goes to HTTP, whose server speaks HTTP/1.1 and HTTP/2
// and passes HTTP/2 gRPC requests on to gRPC (SplitHTTP2).
//
// Invariants:
//   - A connection is read only until its first bytes decide it: at most the preface's 24
//     bytes, and an HTTP/1 request is told from the preface at its first or second byte. What
//     was read is handed on in front of the rest, so neither server misses a byte.
//   - Over TLS, every certificate callback and verification of the port's config runs as it is
//     (the config is cloned once per mux, not per connection, so session tickets stay valid
//     across connections), and every failed handshake is reported to the mux's refused function.
//   - The sniff (or the TLS handshake) is bounded by a deadline: a connection that sends nothing
//     (or too little) in that time is closed. Nothing else waits on a connection, so the accept
//     loop never stalls.
//   - Close closes the listener, both halves and every connection still being sniffed, and Serve
//     returns once every goroutine of the mux has ended. Closing one half (a server that stops)
//     leaves the other serving; what would go to a closed half is closed.
package portmux
