package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeSnapshot answers Maintenance/Snapshot with serve, and nothing else.
type fakeSnapshot struct {
	pb.UnimplementedMaintenanceServer
	serve func(send func(blob []byte) error) error
}

func (f *fakeSnapshot) Snapshot(_ *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	return f.serve(func(blob []byte) error {
		return stream.Send(&pb.SnapshotResponse{Header: &pb.ResponseHeader{ClusterId: 7, MemberId: 9}, Blob: blob})
	})
}

// fakeSnapshotServer serves fakeSnapshot on a loopback port.
func fakeSnapshotServer(t *testing.T, serve func(send func(blob []byte) error) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterMaintenanceServer(s, &fakeSnapshot{serve: serve})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func snapshotClient(t *testing.T, eps ...string) *Client {
	t.Helper()
	c, err := New(Config{Endpoints: eps, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// noFiles checks that a failed save left neither the file nor its .part.
func noFiles(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + ".part"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
}

func TestSaveSnapshotWritesDatabaseAndChecksum(t *testing.T) {
	db := bytes.Repeat([]byte("0123456789"), 1000)
	sum := sha256.Sum256(db)
	addr := fakeSnapshotServer(t, func(send func([]byte) error) error {
		// Chunks that do not line up with the checksum: the split is found from the end.
		for _, b := range [][]byte{db[:3000], db[3000:], sum[:10], sum[10:]} {
			if err := send(b); err != nil {
				return err
			}
		}
		return nil
	})
	// The first endpoint refuses connections: a read moves on before any byte arrived.
	dead := deadAddr(t)
	path := filepath.Join(t.TempDir(), "backup.db")
	r, err := snapshotClient(t, dead, addr).SaveSnapshot(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte(nil), db...), sum[:]...); !bytes.Equal(got, want) {
		t.Errorf("file holds %d bytes, want %d", len(got), len(want))
	}
	if r.Size != int64(len(db)+sha256.Size) || r.Header.ClusterID != 7 || r.Header.MemberID != 9 || r.Path != path {
		t.Errorf("result %+v", r)
	}
	if _, err := os.Lstat(path + ".part"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".part left behind: %v", err)
	}
}

func TestSaveSnapshotFailuresLeaveNoFile(t *testing.T) {
	db := []byte("database")
	sum := sha256.Sum256(db)
	tests := []struct {
		name  string
		serve func(send func([]byte) error) error
		check func(error) bool
	}{
		{"bad checksum", func(send func([]byte) error) error {
			bad := sum
			bad[0] ^= 1
			send(db)
			return send(bad[:])
		}, func(err error) bool { return errors.Is(err, ErrSnapshotChecksum) }},
		{"no checksum", func(send func([]byte) error) error {
			return send(db[:4])
		}, func(err error) bool { return errors.Is(err, ErrSnapshotChecksum) }},
		{"broken after bytes", func(send func([]byte) error) error {
			send(db)
			return status.Error(codes.Unavailable, "member went away")
		}, func(err error) bool {
			var se *SnapshotStreamError
			return errors.As(err, &se) && se.Received == int64(len(db))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := fakeSnapshotServer(t, tt.serve)
			path := filepath.Join(t.TempDir(), "backup.db")
			_, err := snapshotClient(t, addr).SaveSnapshot(context.Background(), path)
			if !tt.check(err) {
				t.Errorf("error %v", err)
			}
			noFiles(t, path)
		})
	}
}

func TestSaveSnapshotNotRetriedAfterBytes(t *testing.T) {
	good := fakeSnapshotServer(t, func(send func([]byte) error) error {
		t.Error("second endpoint asked after the first had sent bytes")
		return nil
	})
	broken := fakeSnapshotServer(t, func(send func([]byte) error) error {
		send([]byte("part of a database"))
		return status.Error(codes.Unavailable, "etcdserver: server stopped")
	})
	path := filepath.Join(t.TempDir(), "backup.db")
	_, err := snapshotClient(t, broken, good).SaveSnapshot(context.Background(), path)
	var se *SnapshotStreamError
	if !errors.As(err, &se) {
		t.Errorf("error %v, want a SnapshotStreamError", err)
	}
	noFiles(t, path)
}

func TestSaveSnapshotInterruptedLeavesNoFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "backup.db")
	sent := make(chan struct{})
	addr := fakeSnapshotServer(t, func(send func([]byte) error) error {
		send(bytes.Repeat([]byte("x"), 1<<16))
		close(sent)
		// Stall mid-stream, as a member would under load, until the client gives up.
		time.Sleep(5 * time.Second)
		return nil
	})
	go func() {
		<-sent
		// The .part file exists mid-stream; the interruption must take it away.
		for i := 0; i < 200; i++ {
			if fi, err := os.Stat(path + ".part"); err == nil && fi.Size() > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := snapshotClient(t, addr).SaveSnapshot(ctx, path)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	noFiles(t, path)
}
