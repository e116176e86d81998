package client

import (
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// etcd's answers become the package's types with every field the commands read.

var (
	pbHeader  = &pb.ResponseHeader{ClusterId: 0x998d851d58177d55, MemberId: 0x77f41cbd71028a3a, Revision: 9, RaftTerm: 3}
	pbMembers = []*pb.Member{
		{ID: 0x96dbf27657837fe1, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		{ID: 0x77f41cbd71028a3a, Name: "infra0", PeerURLs: []string{"http://127.0.0.1:12380", "http://localhost:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}},
	}
	wantHeader  = Header{ClusterID: 0x998d851d58177d55, MemberID: 0x77f41cbd71028a3a, RaftTerm: 3}
	wantMembers = []Member{
		{ID: 0x96dbf27657837fe1, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		{ID: 0x77f41cbd71028a3a, Name: "infra0", Started: true, PeerURLs: []string{"http://127.0.0.1:12380", "http://localhost:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}},
	}
)

func TestClusterAnswersConvert(t *testing.T) {
	if h := headerOf(pbHeader); h != wantHeader {
		t.Errorf("header %+v, want %+v", h, wantHeader)
	}
	if h := headerOf(nil); h != (Header{}) {
		t.Errorf("missing header %+v", h)
	}
	if ms := membersOf(pbMembers); !reflect.DeepEqual(ms, wantMembers) {
		t.Errorf("members %+v, want %+v", ms, wantMembers)
	}
}

func TestStatusConverts(t *testing.T) {
	got := statusOfAnswer(&pb.StatusResponse{
		Header: pbHeader, Version: "3.7.1", DbSize: 1 << 20, Leader: 0x77f41cbd71028a3a,
		RaftIndex: 1200, RaftTerm: 3, RaftAppliedIndex: 1100, Errors: []string{"x"}, IsLearner: true,
		DbSizeInUse: 1 << 19, StorageVersion: "3.7.0", DowngradeInfo: &pb.DowngradeInfo{Enabled: true, TargetVersion: "3.6"},
	})
	want := &Status{Header: wantHeader, Version: "3.7.1", DBSize: 1 << 20, Leader: 0x77f41cbd71028a3a,
		RaftIndex: 1200, RaftTerm: 3, RaftAppliedIndex: 1100, Errors: []string{"x"}, DBSizeInUse: 1 << 19, IsLearner: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("converted %+v, want %+v", got, want)
	}
}
