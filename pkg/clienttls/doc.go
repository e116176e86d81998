// Package clienttls is clusterctl's side of TLS: it builds the *tls.Config from etcdctl's
// flags (--cacert, --cert, --key, --insecure-skip-tls-verify) and turns what grpc-go reports
// when TLS goes wrong into one line that names the endpoint and says what to do.
//
// Invariants:
//   - It imports the standard library only, never anything under pkg/server nor a logging or
//     flag package: clusterctl's start-up time is benchmarked, and the CLI must not link the
//     server.
//   - Options.Config reads and checks every file before anything is dialed; a missing,
//     unreadable or non-PEM file, a certificate without its key, or a key that does not match
//     its certificate is an *ArgError naming the flag, so it can be refused as a bad argument.
//   - The key exchange is Go's default (the post-quantum hybrid X25519MLKEM768 first), as in
//     etcd's client: a faster classical-only handshake is not bought with recorded traffic.
//   - The client certificate is always presented when the server asks, as etcdctl does, even
//     if its issuer is not among the CAs the server lists: the server then says why it refuses,
//     and the message can name the real reason.
//   - Explain classifies by the text grpc-go puts in its status message, because that is all
//     an RPC error carries (grpc-go flattens the handshake error into a string); the texts it
//     matches are asserted against real grpc-go servers and clients in the tests, for TLS 1.2
//     and 1.3. With TLS 1.3 the server checks the client certificate after the client's side
//     of the handshake is done, so a refusal may arrive as the alert or as a bare broken pipe
//     or EOF on the first write or read: on a TLS connection such a close is read as a refused
//     client certificate (required when none was sent), on a plain one as a TLS server.
//   - An error Explain does not recognise is returned unchanged.
package clienttls
