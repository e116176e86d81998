package client

import (
	"context"

	"google.golang.org/protobuf/encoding/protowire"
)

// The KV calls clusterctl's discovery commands make on an etcd cluster that serves as a
// discovery service: a range and one create-if-absent transaction, hand-encoded like the member
// calls (wire.go) with the field numbers of etcdserverpb/rpc.proto and mvccpb/kv.proto
// (v3.7.1); kv_test.go checks them against the generated types. Field numbers are etcd's wire
// format: never change them.

const (
	methodRange = "/etcdserverpb.KV/Range"
	methodTxn   = "/etcdserverpb.KV/Txn"
)

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
	end := ""
	if prefix {
		end = prefixEnd(key)
	}
	var a rangeAnswer
	if _, err := c.invoke(ctx, true, methodRange, rangeRequest(key, end), &a); err != nil {
		return nil, err
	}
	return &RangeResult{Header: a.Header, KVs: a.KVs}, nil
}

// CreateKey writes key = value only if key does not exist, in one transaction. It returns
// whether it wrote, and otherwise the key as it is.
func (c *Client) CreateKey(ctx context.Context, key, value string) (created bool, existing *KeyValue, err error) {
	var a txnAnswer
	if _, err := c.invoke(ctx, false, methodTxn, createTxnRequest(key, value), &a); err != nil {
		return false, nil, err
	}
	if a.Succeeded || len(a.Range.KVs) == 0 {
		return a.Succeeded, nil, nil
	}
	return false, &a.Range.KVs[0], nil
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

// rangeRequest is RangeRequest{key = 1, range_end = 2}.
func rangeRequest(key, end string) request {
	b := appendBytes(nil, 1, key)
	if end != "" {
		b = appendBytes(b, 2, end)
	}
	return b
}

// createTxnRequest is TxnRequest{compare = 1, success = 2, failure = 3}: if the key's
// create_revision is 0 (it does not exist), put it; otherwise read it.
func createTxnRequest(key, value string) request {
	// Compare{result = 1: EQUAL (0, not written), target = 2: CREATE (1), key = 3,
	// create_revision = 5}. create_revision is in a oneof, so its zero is written, as the
	// generated code writes a set oneof field.
	cmp := appendUint(nil, 2, 1)
	cmp = appendBytes(cmp, 3, key)
	cmp = protowire.AppendVarint(protowire.AppendTag(cmp, 5, protowire.VarintType), 0)
	// RequestOp{request_put = 2: PutRequest{key = 1, value = 2}}.
	put := appendMessage(nil, 2, appendBytes(appendBytes(nil, 1, key), 2, value))
	// RequestOp{request_range = 1: RangeRequest{key = 1}}.
	get := appendMessage(nil, 1, rangeRequest(key, ""))
	b := appendMessage(nil, 1, cmp)
	b = appendMessage(b, 2, put)
	return appendMessage(b, 3, get)
}

func appendBytes(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

// rangeAnswer is RangeResponse{header = 1, kvs = 2}.
type rangeAnswer struct {
	Header Header
	KVs    []KeyValue
}

func (a *rangeAnswer) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			return a.Header.unmarshal(f.bytes)
		case f.num == 2 && f.typ == protowire.BytesType:
			var kv KeyValue
			if err := kv.unmarshal(f.bytes); err != nil {
				return err
			}
			a.KVs = append(a.KVs, kv)
		}
		return nil
	})
}

// unmarshal reads mvccpb.KeyValue{key = 1, create_revision = 2, mod_revision = 3, value = 5}.
func (kv *KeyValue) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			kv.Key = string(f.bytes)
		case f.num == 2 && f.typ == protowire.VarintType:
			kv.CreateRevision = int64(f.varint)
		case f.num == 3 && f.typ == protowire.VarintType:
			kv.ModRevision = int64(f.varint)
		case f.num == 5 && f.typ == protowire.BytesType:
			kv.Value = string(f.bytes)
		}
		return nil
	})
}

// txnAnswer is TxnResponse{header = 1, succeeded = 2, responses = 3}, of which only the
// range a failed createTxnRequest answers with is read: ResponseOp{response_range = 1}.
type txnAnswer struct {
	Header    Header
	Succeeded bool
	Range     rangeAnswer
}

func (a *txnAnswer) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			return a.Header.unmarshal(f.bytes)
		case f.num == 2 && f.typ == protowire.VarintType:
			a.Succeeded = protowire.DecodeBool(f.varint)
		case f.num == 3 && f.typ == protowire.BytesType:
			return eachField(f.bytes, func(op field) error {
				if op.num == 1 && op.typ == protowire.BytesType {
					return a.Range.unmarshal(op.bytes)
				}
				return nil
			})
		}
		return nil
	})
}
