package server_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/h2probe"
	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// A member never pings a client or a peer because data arrived: every connection it accepts has
// a fixed flow-control window (transport.Window). grpc's dynamic window pings the sender after
// data arrives, and those pings and their answers were half of the members' socket traffic.
func TestNoFlowControlPings(t *testing.T) {
	m := servertest.Start(t, 1, nil)[0]
	for _, c := range []struct {
		port, url, path string
		msg             []byte
	}{
		// Registered methods, so that the member reads the request before it answers.
		{"client", m.ClientURL, "/etcdserverpb.Cluster/MemberList", nil},
		{"peer", m.PeerURL, pb.Members_Membership_FullMethodName, nil},
	} {
		addr := strings.TrimPrefix(c.url, "http://")
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		pings, err := h2probe.Call(conn, addr, c.path, c.msg)
		conn.Close()
		if err != nil {
			t.Fatalf("%s port: %v", c.port, err)
		}
		if pings != 0 {
			t.Errorf("%s port: %d pings from the member during one call, want none", c.port, pings)
		}
	}
}
