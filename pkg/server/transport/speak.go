package transport

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/wire"
)

// The peer protocol's calls for a program that speaks it from outside a member: the tests that
// speak it as a stranger would, or as a member in another member's name (tests/e2e's hostile
// peer, the chaos test's forged-notice fault). They use the transport's own names and encodings,
// so the protocol is declared once.

// Notice names one kind of notice (see notice).
type Notice string

// The notices, by their method on the peer port.
const (
	Removed Notice = removedMethod
	Hello   Notice = helloMethod
	Probe   Notice = probeMethod
)

// SendNotice sends a notice of kind, naming cluster, sender and receiver, over conn.
func SendNotice(ctx context.Context, conn *grpc.ClientConn, kind Notice, clusterID, from, to uint64) error {
	return conn.Invoke(ctx, string(kind), &notice{ClusterID: clusterID, From: from, To: to}, &ack{})
}

// SendRaft sends envs on one raft stream over conn, whose metadata names peerURLs as the
// sender's, and returns how the receiver ended it: nil when it took every envelope.
func SendRaft(ctx context.Context, conn *grpc.ClientConn, peerURLs []string, envs []*Envelope) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(peerURLs) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.PeerURLs, strings.Join(peerURLs, ","))
	}
	s, err := conn.NewStream(ctx, &raftStreamDesc, raftMethod)
	if err != nil {
		return err
	}
	for _, env := range envs {
		if err := s.SendMsg(env); err != nil {
			if errors.Is(err, io.EOF) {
				break // the receiver ended the stream: RecvMsg says why
			}
			return err
		}
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	err = s.RecvMsg(&ack{})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
