package client

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/wire"
	cpb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// dryRunServer answers like clusterd's client port, or like etcd (clusterd false), which knows
// no DryRun service and makes every change it is sent.
type dryRunServer struct {
	pb.UnimplementedClusterServer
	cpb.UnimplementedDryRunServer
	clusterd bool
	// report is the verdict's report; refusal the status the change itself would get.
	report  *wire.Report
	refusal error
	changes atomic.Int32 // changes made (etcd)
	dryRuns atomic.Int32
}

func (f *dryRunServer) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return &pb.MemberListResponse{Header: pbHeader, Members: pbMembers}, nil
}

func (f *dryRunServer) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	f.changes.Add(1)
	return &pb.MemberRemoveResponse{Header: pbHeader, Members: pbMembers}, nil
}

func (f *dryRunServer) Check(context.Context, *cpb.Change) (*cpb.ChangeReply, error) {
	f.dryRuns.Add(1)
	return wire.VerdictProto(f.report, f.refusal), nil
}

func serveDryRun(t *testing.T, f *dryRunServer) string {
	return serveWith(t, func(s *grpc.Server) {
		pb.RegisterClusterServer(s, f)
		if f.clusterd {
			cpb.RegisterDryRunServer(s, f)
		}
	})
}

// A report as clusterd writes it.
var clusterdReport = &wire.Report{
	Cluster: membership.NewCluster(11064646220597656917, nil),
	Member:  membership.Member{ID: 10870548715677122529, Name: "infra3", PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
	Before:  membership.QuorumReport{Voters: 3, Learners: 0, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
	After:   membership.QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
}

func TestDryRunAccepted(t *testing.T) {
	f := &dryRunServer{clusterd: true, report: clusterdReport}
	c := newClient(t, serveDryRun(t, f))
	r, err := c.MemberAddDryRun(context.Background(), "infra3", []string{"http://127.0.0.1:42380"}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := &DryRun{
		ClusterID:     0x998d851d58177d55,
		Member:        Member{ID: 0x96dbf27657837fe1, Name: "infra3", PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		ProvisionalID: true,
		PeerURLs:      []string{"http://127.0.0.1:42380"},
		Before:        &QuorumReport{Voters: 3, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2},
		After:         &QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	if f.changes.Load() != 0 || f.dryRuns.Load() != 1 {
		t.Errorf("%d changes, %d dry runs", f.changes.Load(), f.dryRuns.Load())
	}
}

// A refusal is the verdict's, beside its report, and is the error the change itself would get:
// a server's answer, or an unknown outcome for a time-out, as call gives them.
func TestDryRunRefusedKeepsReportAndError(t *testing.T) {
	report := &wire.Report{Cluster: membership.NewCluster(1, nil), Member: membership.Member{ID: 5}}
	for _, tt := range []struct {
		refusal error
		is      func(error) bool
	}{
		{status.Error(codes.NotFound, rpcerr.ErrMemberNotFound.Message), func(err error) bool { return errors.Is(err, rpcerr.ErrMemberNotFound) }},
		{status.Error(codes.Unavailable, rpcerr.ErrTimeout.Message), func(err error) bool {
			var unknown *OutcomeUnknownError
			return errors.As(err, &unknown) && errors.Is(err, rpcerr.ErrTimeout)
		}},
	} {
		f := &dryRunServer{clusterd: true, report: report, refusal: tt.refusal}
		r, err := newClient(t, serveDryRun(t, f)).MemberRemoveDryRun(context.Background(), 5)
		if err != nil {
			t.Fatal(err)
		}
		if !tt.is(r.Err) || r.Before != nil || r.After != nil || r.Member.ID != 5 {
			t.Errorf("%v: got %+v", tt.refusal, r)
		}
	}
}

func TestDryRunIsNeverSentToEtcd(t *testing.T) {
	f := &dryRunServer{}
	_, err := newClient(t, serveDryRun(t, f)).MemberRemoveDryRun(context.Background(), 5)
	var unsupported *DryRunUnsupportedError
	if !errors.As(err, &unsupported) {
		t.Fatalf("got %v, want *DryRunUnsupportedError", err)
	}
	if n := f.changes.Load(); n != 0 {
		t.Errorf("%d changes sent to etcd", n)
	}
}

// The member that does not know the call is the answer: with etcd first and clusterd second, the
// dry run is not sent on to clusterd.
func TestDryRunStopsAtTheMemberThatDoesNotKnowIt(t *testing.T) {
	etcd, clusterd := &dryRunServer{}, &dryRunServer{clusterd: true, report: clusterdReport}
	c := newClient(t, serveDryRun(t, etcd), serveDryRun(t, clusterd))
	_, err := c.MemberRemoveDryRun(context.Background(), 5)
	var unsupported *DryRunUnsupportedError
	if !errors.As(err, &unsupported) || etcd.changes.Load() != 0 || clusterd.dryRuns.Load() != 0 {
		t.Errorf("got %v; etcd changes %d, clusterd dry runs %d", err, etcd.changes.Load(), clusterd.dryRuns.Load())
	}
}

// A peer URL given as endpoint (a port that serves no etcd service) is said to be one.
func TestDryRunAtAPeerURL(t *testing.T) {
	_, err := newClient(t, serveWith(t, func(*grpc.Server) {})).MemberPromoteDryRun(context.Background(), 5)
	var peer *PeerEndpointError
	if !errors.As(err, &peer) {
		t.Fatalf("got %v, want *PeerEndpointError", err)
	}
}

func TestResolveIn(t *testing.T) {
	ms := []Member{{ID: 0x77f41cbd71028a3a, Name: "infra0"}, {ID: 0x96dbf27657837fe1, Name: "x"}, {ID: 2, Name: "x"}}
	tests := []struct {
		ref     string
		want    uint64
		wantErr error
	}{
		{"infra0", 0x77f41cbd71028a3a, nil},
		{"77f41cbd71028a3a", 0x77f41cbd71028a3a, nil},
		{"abc", 0xabc, nil},
		{"infra9", 0, rpcerr.ErrMemberNotFound},
	}
	for _, tt := range tests {
		got, err := ResolveIn(ms, tt.ref)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("ResolveIn(%q) = %x, %v", tt.ref, got, err)
		}
	}
	var amb *AmbiguousNameError
	if _, err := ResolveIn(ms, "x"); !errors.As(err, &amb) {
		t.Errorf("ambiguous: got %v", err)
	}
}
