package authz

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
	"github.com/clusterctl/clusterctl/pkg/server/servertls"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// stub answers every call it is given and counts them, so a test can tell that a denied call
// never reached the handler.
type stub struct {
	pb.UnimplementedClusterServer
	pb.UnimplementedMaintenanceServer
	calls atomic.Int32
}

func (s *stub) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	s.calls.Add(1)
	return &pb.MemberListResponse{}, nil
}

func (s *stub) MemberAdd(context.Context, *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	s.calls.Add(1)
	return &pb.MemberAddResponse{}, nil
}

func (s *stub) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	s.calls.Add(1)
	return &pb.MemberRemoveResponse{}, nil
}

func (s *stub) MemberUpdate(context.Context, *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	s.calls.Add(1)
	return &pb.MemberUpdateResponse{}, nil
}

func (s *stub) MemberPromote(context.Context, *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	s.calls.Add(1)
	return &pb.MemberPromoteResponse{}, nil
}

func (s *stub) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	s.calls.Add(1)
	return &pb.StatusResponse{}, nil
}

func (s *stub) MoveLeader(context.Context, *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	s.calls.Add(1)
	return &pb.MoveLeaderResponse{}, nil
}

func (s *stub) Snapshot(_ *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	s.calls.Add(1)
	return stream.Send(&pb.SnapshotResponse{Blob: []byte("db")})
}

type env struct {
	ca     *testpki.CA
	server *testpki.Pair
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server("m1")
	if err != nil {
		t.Fatal(err)
	}
	return &env{ca: ca, server: server}
}

// start serves the stub on 127.0.0.1 over TLS with client-certificate auth, as clusterd's
// client port will, behind the authorizer for allowed.
func (e *env) start(t *testing.T, allowed []string) (string, *stub) {
	t.Helper()
	cfgs, err := servertls.Build(servertls.Settings{Client: servertls.Side{
		CertFile: e.server.CertFile, KeyFile: e.server.KeyFile, TrustedCAFile: e.ca.CertFile,
		ClientCertAuth: true, ListenURLs: []string{"https://127.0.0.1:0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return serveStub(t, credentials.NewTLS(cfgs.Client), allowed)
}

func serveStub(t *testing.T, creds credentials.TransportCredentials, allowed []string) (string, *stub) {
	t.Helper()
	s := grpc.NewServer(append(Interceptors(allowed), grpc.Creds(creds))...)
	st := &stub{}
	pb.RegisterClusterServer(s, st)
	pb.RegisterMaintenanceServer(s, st)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String(), st
}

// as dials addr with a client certificate for cn.
func (e *env) as(t *testing.T, addr, cn string) *grpc.ClientConn {
	t.Helper()
	p, err := e.ca.Client(cn)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := p.TLS()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: e.ca.Pool(), Certificates: []tls.Certificate{cert}}
	return dialWith(t, addr, credentials.NewTLS(cfg))
}

func dialWith(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// calls makes every call the tests care about, by name.
func calls(conn *grpc.ClientConn) map[string]func(context.Context) error {
	c, m := pb.NewClusterClient(conn), pb.NewMaintenanceClient(conn)
	return map[string]func(context.Context) error{
		"MemberList": func(ctx context.Context) error { _, err := c.MemberList(ctx, &pb.MemberListRequest{}); return err },
		"Status":     func(ctx context.Context) error { _, err := m.Status(ctx, &pb.StatusRequest{}); return err },
		"MemberAdd": func(ctx context.Context) error {
			_, err := c.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"https://127.0.0.1:2380"}})
			return err
		},
		"MemberRemove": func(ctx context.Context) error {
			_, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: 1})
			return err
		},
		"MemberUpdate": func(ctx context.Context) error {
			_, err := c.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: 1})
			return err
		},
		"MemberPromote": func(ctx context.Context) error {
			_, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: 1})
			return err
		},
		"MoveLeader": func(ctx context.Context) error {
			_, err := m.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: 1})
			return err
		},
		"Snapshot": func(ctx context.Context) error {
			s, err := m.Snapshot(ctx, &pb.SnapshotRequest{})
			if err != nil {
				return err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		},
	}
}

var open = map[string]bool{"MemberList": true, "Status": true, "Alarm": true}

func isPermissionDenied(err error) bool {
	s, ok := status.FromError(err)
	// rpctypes.Error is how etcd's own client turns the status into its typed error.
	return ok && s.Code() == codes.PermissionDenied && s.Message() == "etcdserver: permission denied" &&
		errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionDenied)
}

func TestOnlyAllowedCNsDoAdminOperations(t *testing.T) {
	e := newEnv(t)
	addr, st := e.start(t, []string{"root", "kube-apiserver-etcd-client"})
	for _, c := range []struct {
		cn    string
		admin bool
	}{
		{"root", true},
		{"kube-apiserver-etcd-client", true},
		{"reader", false},
		{"Root", false}, // CNs compare exactly, as etcd's allowed CNs do
	} {
		conn := e.as(t, addr, c.cn)
		for name, call := range calls(conn) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			before := st.calls.Load()
			err := call(ctx)
			cancel()
			reached := st.calls.Load() > before
			if c.admin || open[name] {
				if err != nil || !reached {
					t.Errorf("%s %s: %v, want it served", c.cn, name, err)
				}
				continue
			}
			if !isPermissionDenied(err) {
				t.Errorf("%s %s: %v, want etcdserver: permission denied", c.cn, name, err)
			}
			if reached {
				t.Errorf("%s %s: a denied call reached the handler", c.cn, name)
			}
		}
	}
}

func TestEmptyListAllowsEveryCertificate(t *testing.T) {
	e := newEnv(t)
	addr, _ := e.start(t, nil)
	for name, call := range calls(e.as(t, addr, "anyone")) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := call(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		cancel()
	}
}

func TestNoVerifiedCertificateIsNoAdmin(t *testing.T) {
	// A plain listener beside the TLS one: nothing to read a CN from.
	addr, _ := serveStub(t, insecure.NewCredentials(), []string{"root"})
	for name, call := range calls(dialWith(t, addr, insecure.NewCredentials())) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := call(ctx)
		cancel()
		if open[name] != (err == nil) || (err != nil && !isPermissionDenied(err)) {
			t.Errorf("%s over plain gRPC: %v", name, err)
		}
	}
}

func TestEveryEtcdMethodIsClassified(t *testing.T) {
	seen := 0
	for _, sd := range []grpc.ServiceDesc{pb.Cluster_ServiceDesc, pb.Maintenance_ServiceDesc} {
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, n := range names {
			full := "/" + sd.ServiceName + "/" + n
			if IsAdmin(full) == open[n] {
				t.Errorf("%s: admin %v", full, IsAdmin(full))
			}
			seen++
		}
	}
	if seen < 12 {
		t.Fatalf("saw %d methods: the service descriptors changed shape", seen)
	}
	if IsAdmin("/grpc.health.v1.Health/Check") {
		t.Error("the health service must stay open")
	}
	// Whoever may list the members may read who changed them.
	if IsAdmin(wire.HistoryList) {
		t.Error("the membership history must be open as MemberList is")
	}
	// A dry run needs what the change itself needs.
	if !IsAdmin(wire.DryRunCheck) {
		t.Error("the dry run of a membership change must be an admin operation as the change is")
	}
}

func TestCheckSetting(t *testing.T) {
	if err := CheckSetting(nil, false); err != nil {
		t.Error(err)
	}
	if err := CheckSetting([]string{"root"}, true); err != nil {
		t.Error(err)
	}
	err := CheckSetting([]string{"root"}, false)
	var se *servertls.SettingError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "--admin-cert-allowed-cn needs --client-cert-auth") {
		t.Errorf("CheckSetting: %v", err)
	}
}
