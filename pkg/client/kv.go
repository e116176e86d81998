package client

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The KV calls clusterctl's discovery commands make on an etcd cluster that serves as a
// discovery service: a range and one create-if-absent transaction.

// KeyValue is one key as etcd stores it.
type KeyValue struct {
	Key            string
	Value          string
	CreateRevision int64
	ModRevision    int64
}

// RangeResult is the answer to a range.
type RangeResult struct {
	Header Header
	KVs    []KeyValue
}

// Range reads key, or every key that starts with key when prefix is set, linearizably.
func (c *Client) Range(ctx context.Context, key string, prefix bool) (*RangeResult, error) {
	var end string
	if prefix {
		end = prefixEnd(key)
	}
	var a pb.RangeResponse
	req := &pb.RangeRequest{Key: []byte(key), RangeEnd: []byte(end)}
	if _, err := c.invoke(ctx, true, pb.KV_Range_FullMethodName, req, &a); err != nil {
		return nil, err
	}
	return &RangeResult{Header: headerOf(a.GetHeader()), KVs: keyValuesOf(a.GetKvs())}, nil
}

// CreateKey writes key = value only if key does not exist, in one transaction. It returns
// whether it wrote, and otherwise the key as it is.
func (c *Client) CreateKey(ctx context.Context, key, value string) (created bool, existing *KeyValue, err error) {
	var a pb.TxnResponse
	if _, err := c.invoke(ctx, false, pb.KV_Txn_FullMethodName, createTxnRequest(key, value), &a); err != nil {
		return false, nil, err
	}
	if a.GetSucceeded() || len(a.GetResponses()) == 0 {
		return a.GetSucceeded(), nil, nil
	}
	kvs := keyValuesOf(a.GetResponses()[0].GetResponseRange().GetKvs())
	if len(kvs) == 0 {
		return false, nil, nil
	}
	return false, &kvs[0], nil
}

// createTxnRequest puts key = value if the key's create revision is 0 (it does not exist), and
// otherwise reads it.
func createTxnRequest(key, value string) *pb.TxnRequest {
	k := []byte(key)
	return &pb.TxnRequest{
		Compare: []*pb.Compare{{
			Result: pb.Compare_EQUAL, Target: pb.Compare_CREATE, Key: k,
			TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 0},
		}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: k, Value: []byte(value)}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: k}}}},
	}
}

// keyValuesOf converts the keys of a range answer.
func keyValuesOf(kvs []*mvccpb.KeyValue) []KeyValue {
	out := make([]KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = KeyValue{
			Key: string(kv.GetKey()), Value: string(kv.GetValue()),
			CreateRevision: kv.GetCreateRevision(), ModRevision: kv.GetModRevision(),
		}
	}
	return out
}

// Endpoints are the client's endpoints, host:port, in order of preference.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// UsesTLS reports whether the client reaches its endpoints over TLS (New refuses a mix).
func (c *Client) UsesTLS() bool { return c.dialed[0].TLS }

// prefixEnd is the range end of every key starting with prefix (etcd's GetPrefixRangeEnd).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}
