package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	kvs := []KeyValue{
		{Key: SizeKey("t"), Value: "2", CreateRevision: 2},
		{Key: MemberKey("t", 0xb), Value: "b=http://b:1", CreateRevision: 4},
		{Key: MemberKey("t", 0xa), Value: "a=http://a:1", CreateRevision: 3},
		{Key: MemberKey("t", 0xc), Value: "garbage", CreateRevision: 5},
		{Key: BootstrappedKey("t", 0xa), Value: "a", CreateRevision: 6},
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
	if _, _, err := Read("t", eps, []KeyValue{{Key: SizeKey("t"), Value: "x"}}, nil); !errors.Is(err, ErrBadSizeKey) {
		t.Errorf("bad size: %v", err)
	}
}
