package client

import (
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The hand-written encoding must agree with etcd's generated code in both directions.

func TestRequestsDecodeAsEtcdMessages(t *testing.T) {
	tests := []struct {
		name string
		req  request
		into proto.Message
		want proto.Message
	}{
		{"list linearizable", memberListRequest(true), &pb.MemberListRequest{}, &pb.MemberListRequest{Linearizable: true}},
		{"list serializable", memberListRequest(false), &pb.MemberListRequest{}, &pb.MemberListRequest{}},
		{"add", memberAddRequest([]string{"http://a:1", "http://b:2"}, true), &pb.MemberAddRequest{},
			&pb.MemberAddRequest{PeerURLs: []string{"http://a:1", "http://b:2"}, IsLearner: true}},
		{"remove", memberIDRequest(0xfe68ca90fe72e3e7), &pb.MemberRemoveRequest{}, &pb.MemberRemoveRequest{ID: 0xfe68ca90fe72e3e7}},
		{"promote", memberIDRequest(1), &pb.MemberPromoteRequest{}, &pb.MemberPromoteRequest{ID: 1}},
		{"update", memberUpdateRequest(7, []string{"unix://x"}), &pb.MemberUpdateRequest{},
			&pb.MemberUpdateRequest{ID: 7, PeerURLs: []string{"unix://x"}}},
		{"authenticate", authenticateRequest("root", "pa:ss"), &pb.AuthenticateRequest{},
			&pb.AuthenticateRequest{Name: "root", Password: "pa:ss"}},
	}
	for _, tt := range tests {
		if err := proto.Unmarshal(tt.req, tt.into); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !proto.Equal(tt.into, tt.want) {
			t.Errorf("%s: decoded %v, want %v", tt.name, tt.into, tt.want)
		}
		// Byte for byte as the generated code writes it, so a server sees no difference.
		if b, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(tt.want); string(b) != string(tt.req) {
			t.Errorf("%s: bytes %x, generated code writes %x", tt.name, []byte(tt.req), b)
		}
	}
}

var (
	pbHeader  = &pb.ResponseHeader{ClusterId: 0x998d851d58177d55, MemberId: 0x77f41cbd71028a3a, Revision: 9, RaftTerm: 3}
	pbMembers = []*pb.Member{
		{ID: 0x96dbf27657837fe1, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		{ID: 0x77f41cbd71028a3a, Name: "infra0", PeerURLs: []string{"http://127.0.0.1:12380", "http://localhost:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}},
	}
	wantHeader  = Header{ClusterID: 0x998d851d58177d55, MemberID: 0x77f41cbd71028a3a, RaftTerm: 3}
	wantMembers = []Member{
		{ID: 0x96dbf27657837fe1, PeerURLs: []string{"http://127.0.0.1:42380"}, IsLearner: true},
		{ID: 0x77f41cbd71028a3a, Name: "infra0", PeerURLs: []string{"http://127.0.0.1:12380", "http://localhost:12380"}, ClientURLs: []string{"http://127.0.0.1:12379"}},
	}
)

func TestAnswersDecodeFromEtcdMessages(t *testing.T) {
	tests := []struct {
		name   string
		msg    proto.Message
		field  protowire.Number
		member Member
	}{
		{"list", &pb.MemberListResponse{Header: pbHeader, Members: pbMembers}, 2, Member{}},
		{"remove", &pb.MemberRemoveResponse{Header: pbHeader, Members: pbMembers}, 2, Member{}},
		{"update", &pb.MemberUpdateResponse{Header: pbHeader, Members: pbMembers}, 2, Member{}},
		{"promote", &pb.MemberPromoteResponse{Header: pbHeader, Members: pbMembers}, 2, Member{}},
		{"add", &pb.MemberAddResponse{Header: pbHeader, Member: pbMembers[0], Members: pbMembers}, 3, wantMembers[0]},
	}
	for _, tt := range tests {
		b, err := proto.Marshal(tt.msg)
		if err != nil {
			t.Fatal(err)
		}
		a := clusterAnswer{membersField: tt.field}
		if err := a.unmarshal(b); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if a.Header != wantHeader || !reflect.DeepEqual(a.Members, wantMembers) || !reflect.DeepEqual(a.Member, tt.member) {
			t.Errorf("%s: decoded %+v", tt.name, a)
		}
	}
}

func TestStatusDecodesFromEtcdMessage(t *testing.T) {
	b, err := proto.Marshal(&pb.StatusResponse{
		Header: pbHeader, Version: "3.7.1", DbSize: 1 << 20, Leader: 0x77f41cbd71028a3a,
		RaftIndex: 1200, RaftTerm: 3, RaftAppliedIndex: 1100, Errors: []string{"x"}, IsLearner: true,
		DbSizeInUse: 1 << 19, StorageVersion: "3.7.0", DowngradeInfo: &pb.DowngradeInfo{Enabled: true, TargetVersion: "3.6"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var s statusAnswer
	if err := s.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	want := statusAnswer{Header: wantHeader, Version: "3.7.1", DBSize: 1 << 20, Leader: 0x77f41cbd71028a3a,
		RaftIndex: 1200, RaftTerm: 3, RaftAppliedIndex: 1100, Errors: []string{"x"}, DBSizeInUse: 1 << 19, IsLearner: true}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("decoded %+v, want %+v", s, want)
	}
}

func TestTruncatedAnswerIsAnError(t *testing.T) {
	b, _ := proto.Marshal(&pb.MemberListResponse{Header: pbHeader, Members: pbMembers})
	a := clusterAnswer{membersField: 2}
	if err := a.unmarshal(b[:len(b)-3]); err == nil {
		t.Error("a truncated message decoded without error")
	}
}

func TestSnapshotMessagesMatchEtcd(t *testing.T) {
	if b, _ := proto.Marshal(&pb.SnapshotRequest{}); string(b) != string(snapshotRequest()) {
		t.Errorf("SnapshotRequest: bytes %x, generated code writes %x", []byte(snapshotRequest()), b)
	}
	b, err := proto.Marshal(&pb.SnapshotResponse{Header: pbHeader, RemainingBytes: 4096, Blob: []byte("bolt\x00db"), Version: "3.7.1"})
	if err != nil {
		t.Fatal(err)
	}
	var a snapshotAnswer
	if err := a.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	want := snapshotAnswer{Header: wantHeader, RemainingBytes: 4096, Blob: []byte("bolt\x00db"), Version: "3.7.1"}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("decoded %+v, want %+v", a, want)
	}
	// The encoder used by the tests' fake server must write what etcd's generated code writes
	// (Header has no revision, so neither does this message).
	gen, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(&pb.SnapshotResponse{
		Header:         &pb.ResponseHeader{ClusterId: wantHeader.ClusterID, MemberId: wantHeader.MemberID, RaftTerm: wantHeader.RaftTerm},
		RemainingBytes: 4096, Blob: []byte("bolt\x00db"), Version: "3.7.1"})
	if got := encodeSnapshotAnswer(want); string(got) != string(gen) {
		t.Errorf("test encoder writes %x, generated code %x", got, gen)
	}
}

func TestAuthenticateAnswerDecodesFromEtcdMessage(t *testing.T) {
	b, err := proto.Marshal(&pb.AuthenticateResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: 2}, Token: "abc.123"})
	if err != nil {
		t.Fatal(err)
	}
	var a authenticateAnswer
	if err := a.unmarshal(b); err != nil || a.Token != "abc.123" {
		t.Errorf("token %q, %v; want abc.123", a.Token, err)
	}
}
