package transport

import (
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Dial opens a client connection to a peer URL for the server's own peer calls. An https:// or
// unixs:// URL is dialed with secure (the peer client side of clusterd's TLS settings); a member
// without them cannot reach such a peer, and says so.
func Dial(peerURL string, secure credentials.TransportCredentials) (*grpc.ClientConn, error) {
	target, tlsURL, err := target(peerURL)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if tlsURL {
		if secure == nil {
			return nil, fmt.Errorf("%s: an https peer URL, and this member has no peer TLS settings", peerURL)
		}
		creds = secure
	}
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(creds),
		// A member that was down is reached again within a heartbeat or two of its return,
		// not after gRPC's default backoff of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: time.Second,
		}),
		grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)))
}

// Window is the flow-control window, per stream and per connection, of a member's end of every
// connection it makes or accepts, to peers and from clients. It is fixed instead of grpc's
// default dynamic window: that window's bandwidth estimator pings the other side whenever data
// arrives, and on this traffic, small raft messages and small answers, that is a ping and its
// answer for nearly every message: socket writes and reads that buy nothing (docs/benchmarks.md
// has the figures). A client keeps whatever window it chose (clusterctl and etcdctl keep grpc's),
// and the member answers its pings. The window holds raft's largest append (raftnode's
// MaxSizePerMsg) and is more than a LAN's bandwidth times its round trip; a larger message still
// passes, as grpc widens a stream's window to a message being read.
const Window = 1 << 20

// ServerWindow is Window as options for a gRPC server.
func ServerWindow() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(Window), grpc.StaticConnWindowSize(Window)}
}

// maxBackoff bounds the wait between two attempts to reach a peer: short, so that a member
// that comes back (or starts for the first time after member add) hears from the leader within
// about a heartbeat; dialing a dead loopback or LAN address ten times a second costs nothing.
const maxBackoff = 100 * time.Millisecond

// MaxMessageSize bounds one peer message, far above the appends raft batches (raftnode's
// MaxSizePerMsg).
const MaxMessageSize = 64 << 20

// target turns a URL into a gRPC dial target, and says whether it speaks TLS.
func target(u string) (string, bool, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", false, err
	}
	switch p.Scheme {
	case "http", "https":
		return "passthrough:///" + p.Host, p.Scheme == "https", nil
	case "unix", "unixs":
		return "unix://" + p.Path, p.Scheme == "unixs", nil
	}
	return "", false, fmt.Errorf("unsupported URL scheme %q in %s (http, https, unix or unixs)", p.Scheme, u)
}

// OlderProtocol reports whether err is a peer's answer that it does not know a call of this
// version's peer protocol (clusterdpb's package): a member of an older build, which this one does
// not talk to, as all members upgrade together (docs/wire.md).
func OlderProtocol(err error) bool { return status.Code(err) == codes.Unimplemented }

// olderProtocolLine is the one line logged when a peer answers OlderProtocol.
func olderProtocolLine(id fmt.Stringer) string {
	return "peer " + id.String() + " speaks an older peer protocol: members of different versions do not talk; upgrade every member together"
}

// Target turns a URL into a gRPC dial target; an error means members cannot dial it.
func Target(u string) (string, error) {
	t, _, err := target(u)
	return t, err
}
