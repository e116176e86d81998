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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// dryRunServer answers a dry run the way clusterd does, or like etcd (clusterd false), which
// ignores the dry-run metadata and makes the change.
type dryRunServer struct {
	pb.UnimplementedClusterServer
	clusterd bool
	// report is the clusterd-dry-run-bin header; refusal the error sent with it.
	report  string
	refusal error
	// ignore answers a change like a clusterd that does not know about dry runs.
	ignore  bool
	changes atomic.Int32 // changes made: requests without the dry-run flag, or to etcd
	dryRuns atomic.Int32
}

func (f *dryRunServer) MemberList(ctx context.Context, _ *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if f.clusterd {
		grpc.SetHeader(ctx, metadata.Pairs(wire.Members, membersValue(), wire.Leader, "77f41cbd71028a3a"))
	}
	return &pb.MemberListResponse{Header: pbHeader, Members: pbMembers}, nil
}

func (f *dryRunServer) answer(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if !f.clusterd || f.ignore || len(md.Get(wire.DryRun)) == 0 {
		f.changes.Add(1)
		return nil
	}
	f.dryRuns.Add(1)
	grpc.SetHeader(ctx, metadata.Pairs(wire.DryRunReport, f.report))
	return f.refusal
}

func (f *dryRunServer) MemberAdd(ctx context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if err := f.answer(ctx); err != nil {
		return nil, err
	}
	return &pb.MemberAddResponse{Header: pbHeader, Member: pbMembers[0], Members: pbMembers}, nil
}

func (f *dryRunServer) MemberRemove(ctx context.Context, _ *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	if err := f.answer(ctx); err != nil {
		return nil, err
	}
	return &pb.MemberRemoveResponse{Header: pbHeader, Members: pbMembers}, nil
}

func serveDryRun(t *testing.T, f *dryRunServer) string {
	return serveWith(t, func(s *grpc.Server) { pb.RegisterClusterServer(s, f) })
}

// A report as clusterd writes it.
var clusterdReport = reportValue(&wire.Report{
	Cluster: membership.NewCluster(11064646220597656917, nil),
	Member:  membership.Member{ID: 10870548715677122529, Name: "infra3", PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
	Before:  membership.QuorumReport{Voters: 3, Learners: 0, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
	After:   membership.QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 2, Quorum: 2, FaultTolerance: 0},
})

func reportValue(r *wire.Report) string {
	v, err := wire.ReportValue(r)
	if err != nil {
		panic(err)
	}
	return v
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

func TestDryRunRefusedKeepsReportAndError(t *testing.T) {
	f := &dryRunServer{clusterd: true,
		report:  reportValue(&wire.Report{Cluster: membership.NewCluster(1, nil), Member: membership.Member{ID: 5}}),
		refusal: status.Error(codes.NotFound, ErrMemberNotFound.Message)}
	r, err := newClient(t, serveDryRun(t, f)).MemberRemoveDryRun(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(r.Err, ErrMemberNotFound) || r.Before != nil || r.After != nil || r.Member.ID != 5 {
		t.Errorf("got %+v", r)
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

func TestDryRunIgnoredIsReported(t *testing.T) {
	f := &dryRunServer{clusterd: true, ignore: true}
	_, err := newClient(t, serveDryRun(t, f)).MemberRemoveDryRun(context.Background(), 5)
	var ignored *DryRunIgnoredError
	if !errors.As(err, &ignored) {
		t.Fatalf("got %v, want *DryRunIgnoredError", err)
	}
}

// The probe goes to the member the change then goes to: with etcd first and clusterd second,
// the dry run is refused rather than sent to either.
func TestDryRunProbesTheMemberItSendsTo(t *testing.T) {
	etcd, clusterd := &dryRunServer{}, &dryRunServer{clusterd: true, report: clusterdReport}
	c := newClient(t, serveDryRun(t, etcd), serveDryRun(t, clusterd))
	_, err := c.MemberRemoveDryRun(context.Background(), 5)
	var unsupported *DryRunUnsupportedError
	if !errors.As(err, &unsupported) || etcd.changes.Load() != 0 || clusterd.dryRuns.Load() != 0 {
		t.Errorf("got %v; etcd changes %d, clusterd dry runs %d", err, etcd.changes.Load(), clusterd.dryRuns.Load())
	}
}

// A linearizable list that already came from clusterd (resolving a name) spares the probe.
func TestDryRunAfterListNeedsNoProbe(t *testing.T) {
	f := &dryRunServer{clusterd: true, report: clusterdReport}
	c := newClient(t, serveDryRun(t, f))
	if _, err := c.ListForResolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.clusterdAt == "" {
		t.Fatal("clusterd's list answer not recorded")
	}
	if _, err := c.MemberRemoveDryRun(context.Background(), 5); err != nil {
		t.Fatal(err)
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
		{"infra9", 0, ErrMemberNotFound},
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
