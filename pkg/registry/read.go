package registry

import (
	"fmt"
	"strings"
)

// KeyValue is one key of a token as the discovery service returned it.
type KeyValue struct {
	Key, Value     string
	CreateRevision int64
}

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
func Read(token string, endpoints []string, kvs []KeyValue, skipped func(error)) (int, []Registration, error) {
	size, found := 0, false
	var regs []Registration
	for _, kv := range kvs {
		switch {
		case kv.Key == SizeKey(token):
			found = true
			var err error
			if size, err = ParseSize(kv.Value); err != nil {
				return 0, nil, &NoTokenError{Token: token, Endpoints: endpoints, Err: err}
			}
		case strings.HasPrefix(kv.Key, MembersPrefix(token)):
			r, err := ParseRegistration(kv.Key, kv.Value, kv.CreateRevision)
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
