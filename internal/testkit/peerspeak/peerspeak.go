// Package peerspeak speaks the peer protocol from outside a member, for tests: as a stranger
// would, or as a member in another member's name (tests/e2e's hostile peer, the chaos test's
// forged faults). It sends clusterdpb's messages with the generated client, as the members do.
package peerspeak

import (
	"context"
	"errors"
	"io"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/wire"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// Notice names one kind of notice (pkg/server/transport's peerService) by its method on the
// peer port.
type Notice string

// The notices.
const (
	Removed Notice = pb.Peer_Removed_FullMethodName
	Hello   Notice = pb.Peer_Hello_FullMethodName
	Probe   Notice = pb.Peer_Probe_FullMethodName
)

// SendNotice sends a notice of kind, naming cluster, sender and receiver, over conn.
func SendNotice(ctx context.Context, conn *grpc.ClientConn, kind Notice, clusterID, from, to uint64) error {
	return conn.Invoke(ctx, string(kind), &pb.Notice{ClusterId: clusterID, From: from, To: to}, &pb.Ack{})
}

// Envelope is a raft message as SendRaft sends it, in a clusterdpb.Envelope.
type Envelope struct {
	ClusterID, From, To uint64
	Message             *raftpb.Message
}

// SendRaft sends envs on one raft stream over conn, whose metadata names peerURLs as the
// sender's, and returns how the receiver ended it: nil when it took every envelope.
func SendRaft(ctx context.Context, conn *grpc.ClientConn, peerURLs []string, envs []*Envelope) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(peerURLs) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, wire.PeerURLs, strings.Join(peerURLs, ","))
	}
	s, err := pb.NewPeerClient(conn).Raft(ctx)
	if err != nil {
		return err
	}
	for _, e := range envs {
		if err := s.Send(&pb.Envelope{ClusterId: e.ClusterID, From: e.From, To: e.To, Message: e.Message}); err != nil {
			if errors.Is(err, io.EOF) {
				break // the receiver ended the stream: CloseAndRecv says why
			}
			return err
		}
	}
	_, err = s.CloseAndRecv()
	return err
}
