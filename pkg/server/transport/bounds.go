package transport

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// What a connection to the peer port may hold without doing its part (docs/clusterd.md, "The peer
// port's limits"). A member's own connections never come near them: its handshake takes
// milliseconds, its sender writes a stream's first message as it opens it, and it closes a stream
// idle for streamIdle itself.
const (
	// ConnectTimeout bounds a peer-port connection's TLS handshake and HTTP/2 preface (gRPC's
	// connection timeout), and the wait for a Raft stream's first envelope.
	ConnectTimeout = 5 * time.Second
	// IdleTimeout closes a connection with no call open (gRPC's MaxConnectionIdle: a member's
	// prober calls every ProbeInterval), and a Raft stream from a sender the membership does not
	// list that carries nothing for this long: a member that lags behind the sender's addition
	// hears from it, its leader, every heartbeat.
	IdleTimeout = 30 * time.Second
	// maxHeaderList bounds a call's metadata: the peer URLs a stream names (wire.PeerURLs) are at
	// most membership.MaxURLs of membership.MaxURLLen bytes.
	maxHeaderList = 64 << 10
)

// memberStreamIdle closes a Raft stream from a member that carries nothing for this long: twice
// the idle time after which its sender closes it (streamIdle), so only a stream no sender of
// this build holds, a forger's in a member's name, is ever closed by it.
const memberStreamIdle = 2 * streamIdle

// PeerServerOptions are the options of the peer port's gRPC servers: the fixed window, the
// message size, and the limits above.
func PeerServerOptions() []grpc.ServerOption {
	return append(ServerWindow(),
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.ConnectionTimeout(ConnectTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: IdleTimeout}),
		grpc.MaxHeaderListSize(maxHeaderList))
}

// streamLimit is how long receive waits for a stream's next envelope: its first within
// ConnectTimeout, then IdleTimeout for a sender the membership does not list, and
// memberStreamIdle for a member.
func (t *Transport) streamLimit(sender membership.ID) time.Duration {
	switch {
	case sender == 0:
		return ConnectTimeout
	case t.h.Cluster().Member(sender) == nil:
		return IdleTimeout
	}
	return memberStreamIdle
}

// errStreamIdle ends a Raft stream that carried nothing within its streamLimit.
var errStreamIdle = errors.New("the raft stream carried no message in time")

// inbox receives a Raft stream's envelopes on a goroutine of its own, so that receive can stop
// waiting for one: a server stream's Recv returns only when something arrives or the stream
// ends, which it does when receive returns.
type inbox struct {
	c     chan received
	done  <-chan struct{} // the stream's end
	timer *time.Timer
}

type received struct {
	env *pb.Envelope
	err error
}

func newInbox(stream pb.Peer_RaftServer) *inbox {
	in := &inbox{c: make(chan received), done: stream.Context().Done(), timer: time.NewTimer(ConnectTimeout)}
	go func() {
		for {
			env, err := stream.Recv()
			select {
			case in.c <- received{env, err}:
			case <-in.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return in
}

// next is the stream's next envelope, or errStreamIdle when none comes within limit, or
// context.Canceled once the stream has ended (its sender went away).
func (in *inbox) next(limit time.Duration) (*pb.Envelope, error) {
	in.timer.Reset(limit)
	select {
	case r := <-in.c:
		return r.env, r.err
	case <-in.done:
		return nil, context.Canceled
	case <-in.timer.C:
		return nil, errStreamIdle
	}
}

func (in *inbox) stop() { in.timer.Stop() }
