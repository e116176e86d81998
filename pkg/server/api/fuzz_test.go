package api_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// raw sends the fuzzer's bytes as the request, undecoded, so the member decodes them itself, and
// takes the answer's bytes as they come.
type raw struct{}

func (raw) Name() string { return "proto" }
func (raw) Marshal(v any) ([]byte, error) {
	return *v.(*[]byte), nil
}
func (raw) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

var _ encoding.Codec = raw{}

// The methods clusterd decodes on its client port, by the fuzzer's choice.
var methods = []string{
	"/etcdserverpb.Cluster/MemberAdd",
	"/etcdserverpb.Cluster/MemberRemove",
	"/etcdserverpb.Cluster/MemberUpdate",
	"/etcdserverpb.Cluster/MemberPromote",
	"/etcdserverpb.Cluster/MemberList",
	"/etcdserverpb.Maintenance/Status",
	"/etcdserverpb.Maintenance/Snapshot",
}

var memberConn *grpc.ClientConn

// FuzzRequests: arbitrary bytes as any request of etcd's Cluster and Maintenance services that
// clusterd serves, sent to one in-process member, which keeps running: it never panics, and
// every refusal is an error of the registry (pkg/rpcerr) or gRPC's own for a message that does
// not decode (Internal, "grpc: error unmarshalling request"), never an unknown error.
func FuzzRequests(f *testing.F) {
	f.Add(uint8(0), []byte{0x0a, 0x15, 'h', 't', 't', 'p', ':', '/', '/', '1', '2', '7', '.', '0', '.', '0', '.', '1', ':', '1', '2', '3', '4', 0x10, 0x01})
	f.Add(uint8(0), []byte{0x0a, 0x06, 'f', 't', 'p', ':', '/', '/'})
	f.Add(uint8(1), []byte{0x08, 0x01})
	f.Add(uint8(1), []byte{})
	f.Add(uint8(2), []byte{0x08, 0x01, 0x12, 0x00})
	f.Add(uint8(3), []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(uint8(4), []byte{0x08, 0x01})
	f.Add(uint8(4), []byte{0xff})
	f.Add(uint8(5), []byte{})
	f.Add(uint8(6), []byte{})
	// One member for every input (each fuzzing worker starts its own): the inputs that change
	// the membership are refused or undone by its rules (one voter, one learner at most).
	ms := servertest.Start(f, 1, nil)
	conn, err := grpc.NewClient("passthrough:///"+ms[0].ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	memberConn = conn
	f.Fuzz(func(t *testing.T, which uint8, req []byte) {
		method := methods[int(which)%len(methods)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if method == "/etcdserverpb.Maintenance/Snapshot" {
			err = snapshot(ctx, req)
		} else {
			var resp []byte
			err = memberConn.Invoke(ctx, method, &req, &resp, grpc.ForceCodec(raw{}))
		}
		if err == nil {
			return
		}
		st := status.Convert(err)
		switch {
		case rpcerr.Lookup(st.Message()) != nil:
		case st.Code() == codes.Internal && strings.Contains(st.Message(), "unmarshal"):
		default:
			t.Fatalf("%s %x: %v %q is neither a registry error nor a decoding refusal", method, req, st.Code(), st.Message())
		}
	})
}

func snapshot(ctx context.Context, req []byte) error {
	desc := &grpc.StreamDesc{ServerStreams: true}
	s, err := memberConn.NewStream(ctx, desc, "/etcdserverpb.Maintenance/Snapshot", grpc.ForceCodec(raw{}))
	if err != nil {
		return err
	}
	if err := s.SendMsg(&req); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		var b []byte
		if err := s.RecvMsg(&b); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
