package registry

import (
	"fmt"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// NoTokenError: the token has no usable size key on the discovery service at Endpoints.
type NoTokenError struct {
	Token     string
	Endpoints []string
	Err       error // ErrSizeNotFound or ErrBadSizeKey
}

func (e *NoTokenError) Error() string {
	eps := strings.Join(e.Endpoints, ",")
	return fmt.Sprintf("%v for discovery token %q on %s: create the token with `clusterctl --endpoints=%s discovery new --size=N`, or check the token and the discovery service's endpoints",
		e.Err, e.Token, eps, eps)
}

func (e *NoTokenError) Unwrap() error { return e.Err }

// Read is what token's keys say: its size and its registrations. kvs are the size key and the
// keys under MembersPrefix, as read from endpoints; other keys are passed over. A registration
// that cannot be read is left out, as etcd leaves it out, and handed to skipped when it is set.
// A missing or bad size is a *NoTokenError.
func Read(token string, endpoints []string, kvs []*mvccpb.KeyValue, skipped func(error)) (int, []Registration, error) {
	size, found := 0, false
	var regs []Registration
	for _, kv := range kvs {
		key := string(kv.GetKey())
		switch {
		case key == SizeKey(token):
			found = true
			var err error
			if size, err = ParseSize(string(kv.GetValue())); err != nil {
				return 0, nil, &NoTokenError{Token: token, Endpoints: endpoints, Err: err}
			}
		case strings.HasPrefix(key, MembersPrefix(token)):
			r, err := ParseRegistration(key, string(kv.GetValue()), kv.GetCreateRevision())
			if err != nil {
				if skipped != nil {
					skipped(err)
				}
				continue
			}
			regs = append(regs, r)
		}
	}
	if !found {
		return 0, nil, &NoTokenError{Token: token, Endpoints: endpoints, Err: ErrSizeNotFound}
	}
	return size, regs, nil
}

// CreateTxn is the transaction that writes key = value only if key does not exist (its create
// revision is 0) and otherwise reads it: how a token's size key and a member's registration are
// written, so that of two writers of one key exactly one writes.
func CreateTxn(key, value string) *pb.TxnRequest {
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

// CreateAnswer reads the answer to CreateTxn: whether it wrote, and otherwise the key as it is
// (nil when it is gone again).
func CreateAnswer(r *pb.TxnResponse) (created bool, existing *mvccpb.KeyValue) {
	if r.GetSucceeded() || len(r.GetResponses()) == 0 {
		return r.GetSucceeded(), nil
	}
	if kvs := r.GetResponses()[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		return false, kvs[0]
	}
	return false, nil
}
