package registry

import (
	"errors"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// kv is a key as etcd answers it.
func kv(key, value string, createRevision int64) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), CreateRevision: createRevision, ModRevision: createRevision}
}

func TestRead(t *testing.T) {
	kvs := []*mvccpb.KeyValue{
		kv(SizeKey("t"), "2", 2),
		kv(MemberKey("t", 0xb), "b=http://b:1", 4),
		kv(MemberKey("t", 0xa), "a=http://a:1", 3),
		kv(MemberKey("t", 0xc), "garbage", 5),
		kv(BootstrappedKey("t", 0xa), "a", 6),
	}
	var skipped []error
	size, regs, err := Read("t", nil, kvs, func(err error) { skipped = append(skipped, err) })
	if err != nil {
		t.Fatal(err)
	}
	cl := Place(size, regs)
	if cl.Size != 2 || cl.InitialCluster() != "a=http://a:1,b=http://b:1" || len(cl.All) != 2 {
		t.Errorf("cluster %+v", cl)
	}
	if len(skipped) != 1 {
		t.Errorf("skipped %v, want the one garbage registration", skipped)
	}
	eps := []string{"https://10.0.0.1:2379"}
	_, _, err = Read("t", eps, kvs[1:], nil)
	var nt *NoTokenError
	if !errors.Is(err, ErrSizeNotFound) || !errors.As(err, &nt) || !strings.Contains(err.Error(), "--endpoints=https://10.0.0.1:2379 discovery new") {
		t.Errorf("no size: %v", err)
	}
	if _, _, err := Read("t", eps, []*mvccpb.KeyValue{kv(SizeKey("t"), "x", 1)}, nil); !errors.Is(err, ErrBadSizeKey) {
		t.Errorf("bad size: %v", err)
	}
}

// The create-if-absent transaction writes only where the key's create revision is 0, and its
// answer says whether it wrote or what the key holds.
func TestCreateTxn(t *testing.T) {
	req := CreateTxn("/k", "v")
	if c := req.GetCompare(); len(c) != 1 || c[0].GetTarget() != pb.Compare_CREATE || c[0].GetResult() != pb.Compare_EQUAL ||
		string(c[0].GetKey()) != "/k" || c[0].GetCreateRevision() != 0 {
		t.Errorf("compare %v", c)
	}
	if put := req.GetSuccess()[0].GetRequestPut(); string(put.GetKey()) != "/k" || string(put.GetValue()) != "v" {
		t.Errorf("success %v", req.GetSuccess())
	}
	if rng := req.GetFailure()[0].GetRequestRange(); string(rng.GetKey()) != "/k" || len(rng.GetRangeEnd()) != 0 {
		t.Errorf("failure %v", req.GetFailure())
	}
	if created, existing := CreateAnswer(&pb.TxnResponse{Succeeded: true}); !created || existing != nil {
		t.Errorf("written: %v, %v", created, existing)
	}
	taken := kv("/k", "other", 3)
	answer := &pb.TxnResponse{Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: []*mvccpb.KeyValue{taken}}}}}}
	if created, existing := CreateAnswer(answer); created || existing != taken {
		t.Errorf("taken: %v, %v", created, existing)
	}
	if created, existing := CreateAnswer(&pb.TxnResponse{Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{}}}}}); created || existing != nil {
		t.Errorf("gone again: %v, %v", created, existing)
	}
}
