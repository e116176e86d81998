package registry

import (
	"reflect"
	"testing"
)

func reg(t *testing.T, key, value string, rev int64) Registration {
	t.Helper()
	r, err := ParseRegistration(key, value, rev)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestKeysAreEtcds(t *testing.T) {
	if got := SizeKey("tok"); got != "/_etcd/registry/tok/_config/size" {
		t.Errorf("SizeKey = %s", got)
	}
	if got := MemberKey("tok", 0x0abc); got != "/_etcd/registry/tok/members/abc" {
		t.Errorf("MemberKey = %s", got)
	}
	if got := MembersPrefix("tok"); got != "/_etcd/registry/tok/members/" {
		t.Errorf("MembersPrefix = %s", got)
	}
	if got := Value("n", []string{"http://b:2", "http://a:1"}); got != "n=http://a:1,n=http://b:2" {
		t.Errorf("Value = %s", got)
	}
}

func TestParseSize(t *testing.T) {
	for v, want := range map[string]error{"3": nil, "0": ErrBadSizeKey, "-1": ErrBadSizeKey, "x": ErrBadSizeKey} {
		if _, err := ParseSize(v); err != want {
			t.Errorf("ParseSize(%q) = %v, want %v", v, err, want)
		}
	}
}

func TestParseRegistrationRefusesWhatEtcdCannotRead(t *testing.T) {
	for _, v := range []string{"", "noequals", "a=http://x:1,b=http://y:2", "a=ftp://x:1"} {
		if _, err := ParseRegistration("/_etcd/registry/t/members/1", v, 1); err == nil {
			t.Errorf("ParseRegistration(%q) accepted", v)
		}
	}
}

func TestPlaceTakesTheFirstSizeByCreateRevision(t *testing.T) {
	regs := []Registration{
		reg(t, "/k/4", "d=http://d:1", 9),
		reg(t, "/k/2", "b=http://b:1", 5),
		reg(t, "/k/1", "a=http://a:1,a=http://a:2", 3),
		reg(t, "/k/5", "a=http://e:1", 6), // a's name again: passed over
		reg(t, "/k/6", "f=http://b:1", 7), // b's URL again: passed over
		reg(t, "/k/3", "c=http://c:1", 8),
	}
	cl := Place(3, regs)
	if !cl.Full() {
		t.Fatal("not full")
	}
	if got := cl.InitialCluster(); got != "a=http://a:1,a=http://a:2,b=http://b:1,c=http://c:1" {
		t.Errorf("InitialCluster = %s", got)
	}
	var states []State
	for _, p := range cl.All {
		states = append(states, p.State)
	}
	want := []State{InCluster, InCluster, Conflict, Conflict, InCluster, BeyondSize}
	if !reflect.DeepEqual(states, want) {
		t.Errorf("states = %v, want %v", states, want)
	}
	// Any order of the same registrations gives the same cluster.
	rev := append([]Registration{}, regs...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if Place(3, rev).InitialCluster() != cl.InitialCluster() {
		t.Error("order of reading changed the cluster")
	}
	if p, _ := cl.Find("/k/5"); p.With != "/k/1" {
		t.Errorf("conflict of /k/5 is with %q", p.With)
	}
}

func TestValidateToken(t *testing.T) {
	for tok, ok := range map[string]bool{"abc": true, "": false, "a/b": false, "..": false, "a b": false} {
		if err := ValidateToken(tok); (err == nil) != ok {
			t.Errorf("ValidateToken(%q) = %v", tok, err)
		}
	}
}
