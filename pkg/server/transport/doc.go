// Package transport carries raft messages between members over gRPC streams on the peer URLs,
// and gives the server a dialer for its own peer-to-peer calls. The calls and messages are
// clusterdpb's (pkg/wire/clusterdpb/clusterd.proto), with grpc's own codec.
//
// transport.go is the Transport: the receiving end, the notices (Removed, Hello, Probe) and the
// address book; identity.go decides whom a peer call may speak for, and logs what is refused;
// bounds.go holds the peer port's time and size limits and the options that set them;
// peer.go is the sender to one peer, its queue and its stream; probe.go measures
// the round trip to each peer; dial.go holds the
// dial and server options every peer connection shares (backoff, the fixed window, the
// message size), and how a peer of an older protocol is told apart (OlderProtocol).
//
// Invariants:
//   - Every raft message on the wire is in an Envelope naming the cluster, the sender and the receiver;
//     the receiver refuses a message from another cluster (etcdserver: cluster ID mismatch),
//     from a removed member, for another member, or whose raft message names other ends than
//     the envelope, and ends the stream. A stream carries one sender's messages.
//   - Over peer TLS with a client certificate, a call is taken for member X only if the
//     certificate speaks for one of X's peer URLs (speaksFor): it covers the URL's host, or has a
//     CN in --peer-cert-allowed-cn (any URL), or passed --peer-cert-allowed-hostname (any URL
//     with a host); a unix socket URL only through the CN. Without a certificate a call is taken
//     as the sender says. Every refusal is logged, rate-limited, with the remote address and CN.
//   - A notice from a member this one has removed is refused as removed, as its raft messages
//     are: a removed member's prober hears it even when raft has nothing to send.
//   - No notice is believed: a Removed notice, or a peer refusing this member as removed (its
//     raft stream, its probe or its greeting), only sends a claim on RemovalClaims, which the
//     server checks with a majority of the voters; a Hello only has this member's sender to the
//     peer dial afresh a connection that is not up.
//     Nothing here steps a raft message that its sender did not send.
//   - Sending never blocks the Ready loop: each peer has a bounded queue; what does not fit, or
//     cannot be sent, is dropped and reported to raft as unreachable (raft resends). A sender
//     has one retry policy, grpc's reconnect backoff on its connection (dial.go): it never waits
//     itself, and each message's fate is reported once. A removed peer's sender, as it stops,
//     tries once to send what is still queued for the peer, and reports nothing of it.
//   - A peer's address book grows from the applied membership, and from a sender the membership
//     does not list yet, at the peer URLs its stream names (metadata clusterd-peer-urls) that
//     this member may dial (dialable: never a unix socket, and over TLS only a URL the sender's
//     certificate speaks for), so that a member that missed the sender's addition can answer it
//     (etcd's remotes); a removed
//     member's peer is closed and never reopened, as its messages are refused, once what raft
//     queued for it before its removal is sent (the commit of its own removal, which stops it).
//   - Bytes are counted per peer as the envelopes' size, sent once the stream took a message
//     and received once the envelope passed the checks (a refused sender is not a series); a
//     dropped message is a send failure; a removed peer's series are dropped with it.
//   - The URL's scheme decides the connection: an https:// or unixs:// peer URL is always
//     dialed with the member's peer credentials (Config.PeerCreds, servertls's peer client
//     side), an http:// or unix:// one never is. Every dial of the member goes through Dial.
//   - With Metrics, each peer's round trip is probed (probe.go) every ProbeInterval on a
//     connection of its own, one call at a time, bounded by the interval; only answered calls on
//     an established connection are observed. A removed peer's prober stops with it, and its
//     series is never written again; Close waits for every prober.
//   - Nothing waits on a peer without a bound (bounds.go): a connection's handshake and a Raft
//     stream's first envelope ConnectTimeout, a connection without a call and a stream from a
//     sender the membership does not list IdleTimeout, a member's stream twice its sender's own
//     idle limit.
//   - A starting member's greeting (Hello) goes over the connection its sender to that peer then
//     uses, and over one of its own only when that one cannot be had.
package transport
