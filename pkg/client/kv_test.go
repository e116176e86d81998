package client

import (
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// The hand-written KV encoding must agree with etcd's generated code in both directions.

func TestKVRequestsAreEtcdMessages(t *testing.T) {
	key, value := "/_etcd/registry/t/_config/size", "3"
	tests := []struct {
		name string
		req  request
		into proto.Message
		want proto.Message
	}{
		{"range", rangeRequest("k", ""), &pb.RangeRequest{}, &pb.RangeRequest{Key: []byte("k")}},
		{"range prefix", rangeRequest("/a/", prefixEnd("/a/")), &pb.RangeRequest{}, &pb.RangeRequest{Key: []byte("/a/"), RangeEnd: []byte("/a0")}},
		{"create", createTxnRequest(key, value), &pb.TxnRequest{}, &pb.TxnRequest{
			Compare: []*pb.Compare{{Result: pb.Compare_EQUAL, Target: pb.Compare_CREATE, Key: []byte(key),
				TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0}}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}}},
			Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}},
		}},
	}
	for _, tt := range tests {
		if err := proto.Unmarshal(tt.req, tt.into); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !proto.Equal(tt.into, tt.want) {
			t.Errorf("%s: decoded %v, want %v", tt.name, tt.into, tt.want)
		}
		if b, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(tt.want); string(b) != string(tt.req) {
			t.Errorf("%s: bytes %x, generated code writes %x", tt.name, []byte(tt.req), b)
		}
	}
}

func TestKVAnswersDecodeFromEtcdMessages(t *testing.T) {
	kvs := []*mvccpb.KeyValue{
		{Key: []byte("/k/1"), Value: []byte("a=http://a:1"), CreateRevision: 5, ModRevision: 7, Version: 2},
		{Key: []byte("/k/2"), Value: []byte("b=http://b:1"), CreateRevision: 6, ModRevision: 6, Version: 1},
	}
	want := []KeyValue{{"/k/1", "a=http://a:1", 5, 7}, {"/k/2", "b=http://b:1", 6, 6}}
	b, _ := proto.Marshal(&pb.RangeResponse{Header: pbHeader, Kvs: kvs, Count: 2})
	var r rangeAnswer
	if err := r.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if r.Header != wantHeader || !reflect.DeepEqual(r.KVs, want) {
		t.Errorf("range decoded %+v", r)
	}
	b, _ = proto.Marshal(&pb.TxnResponse{Header: pbHeader, Succeeded: false, Responses: []*pb.ResponseOp{
		{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: kvs[:1]}}}}})
	var x txnAnswer
	if err := x.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if x.Succeeded || !reflect.DeepEqual(x.Range.KVs, want[:1]) {
		t.Errorf("txn decoded %+v", x)
	}
	b, _ = proto.Marshal(&pb.TxnResponse{Header: pbHeader, Succeeded: true})
	x = txnAnswer{}
	if err := x.unmarshal(b); err != nil || !x.Succeeded {
		t.Errorf("txn succeeded decoded %+v, %v", x, err)
	}
}
