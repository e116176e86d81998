package server

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A member never pings a client or a peer because data arrived: every connection it accepts has
// a fixed flow-control window (transport.Window). grpc's dynamic window pings the sender after
// data arrives, and those pings and their answers were half of the members' socket traffic.
func TestNoFlowControlPings(t *testing.T) {
	m := startCluster(t, 1, nil)[0]
	for port, url := range map[string]string{"client": m.clientURL, "peer": m.peerURL} {
		if n := pingsDuringCall(t, strings.TrimPrefix(url, "http://")); n != 0 {
			t.Errorf("%s port: %d pings from the member during one call, want none", port, n)
		}
	}
}

// pingsDuringCall makes one gRPC call over a bare HTTP/2 connection, an empty MemberListRequest
// (the peer port answers it as unknown, which still reads its data), and counts the pings the
// member sends before the call's trailers.
func pingsDuringCall(t *testing.T, addr string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/etcdserverpb.Cluster/MemberList"},
		{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	// A gRPC message is a flag byte and a 4-byte length; an empty request is just that.
	for _, write := range []func() error{
		func() error { return fr.WriteSettings() },
		func() error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true})
		},
		func() error { return fr.WriteData(1, true, make([]byte, 5)) },
	} {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	pings := 0
	// Frames arrive in the order the member queued them, and it queues a ping for data before
	// the call it carries is answered, so the trailers come after any ping. A connection sees a
	// bounded number of frames before them; the deadline bounds the wait.
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", addr, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				pings++
				if err := fr.WritePing(true, f.Data); err != nil {
					t.Fatal(err)
				}
			}
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				return pings
			}
		case *http2.GoAwayFrame:
			t.Fatalf("%s: the member ended the connection: %v", addr, f.ErrCode)
		}
	}
}
