// Package servertls turns clusterd's TLS settings, etcd's flags with etcd's meaning, into the
// tls.Configs of the client port (serving) and the peer port (serving, and dialing other
// members), and wraps them as gRPC credentials that log a refused peer once, not per attempt.
//
// The configs are etcd's own, from transport.TLSInfo: versions and cipher suites, a
// --trusted-ca-file alone requiring client certificates, the CA pools, and a member with a
// self-signed certificate not verifying its peers'. tlsutil parses the version and suite names.
// This package keeps, on top:
//   - Validate: pure, it reports the first inconsistent setting in one line that starts with
//     the flag to fix (a *SettingError). Where etcd silently drops a security setting, clusterd
//     refuses to start: TLS settings on a port with no https:// (or unixs://) listener,
//     --client-cert-auth without a CA, an allow list with nothing to check it against,
//     --peer-auto-tls with --peer-trusted-ca-file, an insecure cipher suite, a list without the
//     suite HTTP/2 requires.
//   - Every file is checked at Build, before auto TLS writes anything, so a bad file stops
//     clusterd at start with its flag named; a CA file without a certificate (TLSInfo's empty
//     pool) is refused. CA files are read at Build only, as in etcd.
//   - Certificate reloading: the pair is read from disk on each handshake, as in etcd, but a
//     pair that does not load (a half-written renewal) leaves the last good one in service with
//     one warning per distinct failure; TLSInfo's would fail every handshake and log each.
//   - The --peer-cert-allowed-cn/-hostname check on the leaf, in both directions: its error
//     names the certificate and the flag, where TLSInfo's says only "client certificate
//     authentication failed". On the peer port's serving side, a verified certificate for client
//     use only (no serverAuth extended key usage) is refused too, unless
//     --peer-cert-allow-client-only (ClientOnlyFlag): etcd takes it as a peer. Verification itself is crypto/tls's (VerifiedChains is filled in,
//     which the admin authorization relies on).
//   - Auto TLS: cert.pem and key.pem under <data-dir>/fixtures/{client,peer}, as etcd, reused on
//     restart; a P-256 key, not transport.SelfCert's P-521, which makes every handshake dearer,
//     and logged through clusterd's logger (SelfCert needs a zap logger).
//   - Where a multiplexer terminates TLS before gRPC (the client port's https:// listeners,
//     shared with /metrics), it uses the same tls.Config and Refusals, and gRPC takes the
//     connections through Terminated, whose AuthInfo is the one Credentials give.
//   - A refused handshake is logged by Credentials through Refusals once per remote host and
//     certificate identity per interval, with the count of those not logged in between; a
//     connection that closes during the handshake (a TCP probe) is not a refusal.
package servertls
