package client

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The KV calls clusterctl's discovery commands make on an etcd cluster that serves as a
// discovery service, in etcd's generated types: a range, and a transaction (pkg/registry's
// create-if-absent, which clusterd's discovery sends too).

// Range reads key, or every key that starts with key when prefix is set, linearizably.
func (c *Client) Range(ctx context.Context, key string, prefix bool) ([]*mvccpb.KeyValue, error) {
	req := &pb.RangeRequest{Key: []byte(key)}
	if prefix {
		req.RangeEnd = []byte(prefixEnd(key))
	}
	var a pb.RangeResponse
	_, err := c.invoke(ctx, true, pb.KV_Range_FullMethodName, req, &a)
	return a.GetKvs(), err
}

// Txn sends the transaction req, as a change is sent: once it may have reached the server, it
// is not sent again.
func (c *Client) Txn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	var a pb.TxnResponse
	if _, err := c.invoke(ctx, false, pb.KV_Txn_FullMethodName, req, &a); err != nil {
		return nil, err
	}
	return &a, nil
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
