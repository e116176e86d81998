// Package servertls turns clusterd's TLS settings, which are etcd's flags with etcd's meaning,
// into the tls.Configs of the client port (server side) and of the peer port (server side, and
// client side for dialing other members), and wraps them as gRPC credentials that log a refused
// peer once, not once per attempt.
//
// Invariants:
//   - Validate is pure and reports the first inconsistent setting in one line that starts with
//     the flag to fix (a *SettingError). Build calls it, then does the I/O: it loads every
//     certificate, key and CA once so that a bad file stops clusterd at start, not at the first
//     handshake, and makes the auto-TLS certificates.
//   - etcd's meaning, including its surprises: a --trusted-ca-file alone already requires every
//     client to present a certificate that CA signed; --peer-cert-allowed-cn and
//     --peer-cert-allowed-hostname check the leaf certificate in both directions on the peer port
//     (the peer we accept and the peer we dial) and exclude each other; TLS 1.2 is the default
//     minimum; auto TLS writes cert.pem and key.pem under <data-dir>/fixtures/{client,peer} and
//     reuses them on restart; a member dialing peers with a self-signed certificate does not
//     verify theirs.
//   - Where etcd would silently drop a security setting, clusterd refuses to start instead:
//     TLS settings on a port with no https:// (or unixs://) listener, --client-cert-auth
//     without a CA, an allowed-CN list with nothing to check it against, --peer-auto-tls with
//     --peer-trusted-ca-file (the self-signed certificate could never pass that CA).
//   - The certificate and key are read from disk on every handshake, so a certificate renewed
//     on disk serves new connections without a restart (connections already open keep theirs).
//     A pair that does not load (a half-written renewal, a key that does not match yet) leaves
//     the last good pair in service, with one warning per distinct failure. The CA files are
//     read at Build only, as etcd does: rotating a CA takes a restart.
//   - Certificate verification is crypto/tls's own (VerifiedChains is filled in, which the admin
//     authorization relies on); this package only adds the allowed-CN/host-name check after it.
//   - Where a multiplexer terminates TLS before gRPC (the client port, which shares its https://
//     listeners with /metrics), it uses the same tls.Config and reports to the same Refusals,
//     and gRPC takes the connections through Terminated, whose AuthInfo is the one Credentials
//     give: nothing of the above changes.
//   - A refused handshake is logged by Credentials through Refusals: once per remote host and
//     certificate identity per interval, with the number of attempts not logged in between,
//     so a peer retrying every 100ms with a bad certificate yields one line, not a flood. A
//     connection that closes during the handshake (a TCP probe) is not a refusal.
package servertls
