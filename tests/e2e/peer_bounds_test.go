package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/peerspeak"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// What a stranger's connection may hold on a member's peer port, measured on a real member
// (docs/clusterd.md, "The peer port's limits"): a connection that sends nothing, and a Raft stream
// that carries no envelope, are closed after transport.ConnectTimeout; a stranger's Raft stream
// that goes quiet after IdleTimeout, and a connection without a call after about IdleTimeout (and
// gRPC's 5 s of graceful close). Each is measured from its start, all at once.
func TestPeerPortBounds(t *testing.T) {
	m := plainMember(t)
	cid, to := ids(t, m)
	addr := strings.TrimPrefix(m.PeerURL, "http://")
	const slack = 3 * time.Second
	var wg sync.WaitGroup
	check := func(what string, want, extra time.Duration, wait func() error) {
		wg.Go(func() {
			start := time.Now()
			err := wait()
			took := time.Since(start)
			t.Logf("%s: closed after %v (%v)", what, took.Round(100*time.Millisecond), err)
			if took < want-slack || took > want+extra+slack {
				t.Errorf("%s: closed after %v, want %v to %v", what, took, want, want+extra)
			}
		})
	}
	check("a raw connection that sends nothing", transport.ConnectTimeout, 0, func() error {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		buf := make([]byte, 512)
		for err == nil { // the member's HTTP/2 settings come first
			_, err = conn.Read(buf)
		}
		return err
	})
	check("a Raft stream without an envelope", transport.ConnectTimeout, 0, func() error {
		return raftStream(t, m, nil)
	})
	env := &peerspeak.Envelope{ClusterID: cid, From: 0x5eed, To: to, Message: &raftpb.Message{
		Type: raftpb.MessageType_MsgHeartbeatResp.Enum(), From: proto.Uint64(0x5eed), To: proto.Uint64(to), Term: proto.Uint64(1)}}
	check("a stranger's Raft stream gone quiet", transport.IdleTimeout, 0, func() error {
		return raftStream(t, m, env)
	})
	check("a connection without a call", transport.IdleTimeout, 5*time.Second, func() error {
		conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.Connect()
		ctx, cancel := context.WithTimeout(context.Background(), 2*transport.IdleTimeout)
		defer cancel()
		for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
			if !conn.WaitForStateChange(ctx, s) {
				return ctx.Err()
			}
		}
		if !conn.WaitForStateChange(ctx, connectivity.Ready) {
			return ctx.Err()
		}
		return nil
	})
	wg.Wait()
	if !m.Running() {
		t.Fatal("the member stopped")
	}
}

// raftStream opens a Raft stream to m, sends env on it unless nil, and waits until m ends it.
func raftStream(t *testing.T, m *cluster.Member, env *peerspeak.Envelope) error {
	conn, err := transport.Dial(m.PeerURL, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*transport.IdleTimeout)
	defer cancel()
	s, err := clusterdpb.NewPeerClient(conn).Raft(ctx)
	if err != nil {
		return err
	}
	if env != nil {
		err := s.Send(&clusterdpb.Envelope{ClusterId: env.ClusterID, From: env.From, To: env.To, Message: env.Message})
		if err != nil {
			return err
		}
	}
	err = s.RecvMsg(&clusterdpb.Ack{})
	if status.Code(err) != codes.DeadlineExceeded || ctx.Err() != nil {
		t.Errorf("the stream ended with %v, want DeadlineExceeded from the member", err)
	}
	return err
}

// A member URL is at most membership.MaxURLLen bytes: a longer peer URL is refused by clusterctl
// before it sends, by the member when a client sends it anyway (etcd's words), and at start in
// one line.
func TestURLLengthBound(t *testing.T) {
	m := plainMember(t)
	long := "http://" + strings.Repeat("a", 60) + "." + strings.Repeat("b", membership.MaxURLLen) + ":2380"
	want := fmt.Sprintf("URL is %d bytes long; at most %d are allowed: %s...", len(long), membership.MaxURLLen, long[:64])

	out, code := clusterctl(t, "--endpoints="+m.ClientAddr, "member", "add", "x", "--peer-urls="+long)
	if code != 128 || out != "Error: "+want+"\n" {
		t.Fatalf("clusterctl member add with a long peer URL: exit %d\n%q", code, out)
	}
	cc, err := grpc.NewClient("passthrough:///"+m.ClientAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = pb.NewClusterClient(cc).MemberAdd(ctx(t), &pb.MemberAddRequest{PeerURLs: []string{long}})
	if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != "etcdserver: given member URLs are invalid" {
		t.Fatalf("MemberAdd with a long peer URL: %v", err)
	}

	cmd := exec.Command(filepath.Join(binDir, "clusterd"), "--name=x", "--data-dir="+t.TempDir(),
		"--listen-client-urls=http://127.0.0.1:1", "--advertise-client-urls="+long)
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), want) {
		t.Fatalf("clusterd with a long advertised client URL: exit %d (%v)\n%s", code, err, b)
	}
}

// plainMember starts a one-member cluster on plain http and returns its member once started.
func plainMember(t *testing.T) *cluster.Member {
	t.Helper()
	c := newCluster(t, t.TempDir(), nil)
	if _, err := c.Bootstrap(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(tlsWait, "infra0"); err != nil {
		t.Fatal(err)
	}
	return c.Members()[0]
}
