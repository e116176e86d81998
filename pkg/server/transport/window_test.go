package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/h2probe"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A member's own peer connections (Dial) have the fixed window too: the member does not ping a
// peer when the peer's answer arrives.
func TestDialNoFlowControlPings(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		pings int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			done <- result{err: err}
			return
		}
		pings, err := h2probe.Answer(conn, nil) // an empty MembershipAnswer
		done <- result{pings, err}
	}()
	conn, err := Dial("http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pb.NewMembersClient(conn).Membership(ctx, &pb.MembershipRequest{}); err != nil {
		t.Fatalf("call: %v", err)
	}
	conn.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("answering: %v", r.err)
	}
	if r.pings != 0 {
		t.Errorf("%d pings from the dialling member, want none", r.pings)
	}
}
