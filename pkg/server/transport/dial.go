package transport

import (
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial opens a client connection to a peer URL for the server's own peer calls.
func Dial(peerURL string) (*grpc.ClientConn, error) {
	target, err := Target(peerURL)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A member that was down is reached again within a heartbeat or two of its return,
		// not after gRPC's default backoff of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: time.Second,
		}),
		grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window),
		grpc.WithDefaultCallOptions(CallCodec(), grpc.MaxCallRecvMsgSize(MaxMessageSize)))
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

// Target turns a URL into a gRPC dial target.
func Target(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	switch p.Scheme {
	case "http":
		return "passthrough:///" + p.Host, nil
	case "unix":
		return "unix://" + p.Path, nil
	}
	return "", fmt.Errorf("unsupported URL scheme %q in %s (clusterd serves plain http and unix sockets)", p.Scheme, u)
}
