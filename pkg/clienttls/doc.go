// Package clienttls is clusterctl's side of TLS: the *tls.Config from etcdctl's flags
// (--cacert, --cert, --key, --insecure-skip-tls-verify), built by etcd's transport.TLSInfo as
// etcdctl builds it, and what grpc-go reports when TLS goes wrong turned into one line that
// names the endpoint and says what to do.
//
// Invariants:
//   - It never imports anything under pkg/server: the CLI must not link the server.
//   - Every file is read and checked before anything is dialed. What TLSInfo cannot use, and
//     a CA file without a certificate (TLSInfo's empty pool, which would refuse every server),
//     is an *ArgError naming the flag and the file, so it is refused as a bad argument.
//   - As in etcdctl, the client certificate is read again for each handshake and always
//     presented when the server asks, even if its issuer is not among the CAs the server lists:
//     the server then says why it refuses, and the message can name the real reason.
//   - The key exchange is Go's default (the post-quantum hybrid X25519MLKEM768 first), as in
//     etcd's client.
//   - Explain classifies by the text grpc-go puts in its status message, all an RPC error
//     carries; the texts are asserted against real grpc-go servers and clients in the tests,
//     for TLS 1.2 and 1.3. With TLS 1.3 the server checks the client certificate after the
//     client's side of the handshake is done, so a refusal may arrive as the alert or as a
//     bare broken pipe or EOF: on a TLS connection that is read as a refused client
//     certificate (required when none was sent), on a plain one as a TLS server.
//   - An error Explain does not recognise is returned unchanged.
package clienttls
