package transport

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A stream waits ConnectTimeout for its first envelope, IdleTimeout for each of a sender the
// membership does not list, and longer than a member's sender keeps a stream idle for a member.
func TestStreamLimit(t *testing.T) {
	tr, _, _ := serve(t, 2, 7, membership.NewCluster(7, []*membership.Member{{ID: 1, PeerURLs: []string{"http://10.0.0.1:2380"}}}))
	for _, tt := range []struct {
		sender membership.ID
		want   time.Duration
	}{{0, ConnectTimeout}, {5, IdleTimeout}, {1, memberStreamIdle}} {
		if got := tr.streamLimit(tt.sender); got != tt.want {
			t.Errorf("sender %s: %v, want %v", tt.sender, got, tt.want)
		}
	}
	if memberStreamIdle <= streamIdle || IdleTimeout <= ProbeInterval {
		t.Errorf("a member's own stream (idle %v) or prober (every %v) would be cut", streamIdle, ProbeInterval)
	}
}

// A Raft stream that carries no envelope is closed once ConnectTimeout has passed, with
// DeadlineExceeded, and nothing is stepped.
func TestSilentStreamIsClosed(t *testing.T) {
	_, member, url := serve(t, 2, 7, membership.NewCluster(7, nil))
	conn, err := Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*ConnectTimeout)
	defer cancel()
	s, err := pb.NewPeerClient(conn).Raft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.RecvMsg(&pb.Ack{})
	took := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || ctx.Err() != nil {
		t.Fatalf("a silent stream ended with %v after %v, want DeadlineExceeded from the member", err, took)
	}
	if took < ConnectTimeout-time.Second || took > ConnectTimeout+2*time.Second {
		t.Errorf("a silent stream was closed after %v, want about %v", took, ConnectTimeout)
	}
	if member.count() != 0 {
		t.Errorf("stepped %d messages", member.count())
	}
}
