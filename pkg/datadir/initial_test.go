package datadir

import (
	"fmt"
	"testing"
)

func TestLocal(t *testing.T) {
	initial, err := ParseInitialCluster("a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,a=http://10.0.0.9:2380")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, member string
		advertised   []string
		want         string
	}{
		{"ok", "a", []string{"http://10.0.0.1:2380", "http://10.0.0.9:2380"}, ""},
		{"other order", "a", []string{"http://10.0.0.9:2380", "http://10.0.0.1:2380"}, ""},
		{"name not in cluster", "c", []string{"http://10.0.0.3:2380"},
			`couldn't find local name "c" in the initial cluster configuration`},
		{"one URL missing", "a", []string{"http://10.0.0.1:2380"},
			"--initial-cluster has a=http://10.0.0.1:2380,a=http://10.0.0.9:2380 but --initial-advertise-peer-urls is http://10.0.0.1:2380"},
		{"other member's URLs", "b", []string{"http://10.0.0.1:2380"},
			"--initial-cluster has b=http://10.0.0.2:2380 but --initial-advertise-peer-urls is http://10.0.0.1:2380"},
	}
	for _, tt := range tests {
		m, err := Local(initial, tt.member, tt.advertised)
		got := ""
		if err != nil {
			got = err.Error()
		} else if m.Name != tt.member {
			t.Errorf("%s: got member %q", tt.name, m.Name)
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseInitialClusterRefusals(t *testing.T) {
	tests := []struct{ in, want string }{
		{"n1=http://a:1,n1=http://a:1", `peer URL http://a:1 is given twice to "n1"`},
		{"n1=http://a:1,n1=HTTP://A:1", `peer URLs http://a:1 and HTTP://A:1 of "n1" are the same address`},
		{"n1=http://a:1,n2=http://a:1", `peer URL http://a:1 is given to both "n1" and "n2"`},
		{"n1=http://127.0.0.1:1,n2=http://localhost:1", `peer URLs http://127.0.0.1:1 of "n1" and http://localhost:1 of "n2" are the same address`},
		{"n1=http://a:0", "URL port must be a number from 1 to 65535 without leading zeros: http://a:0"},
		{"n1=http://a", `URL address does not have the form "host:port": http://a`},
		{"n1 =http://a:1", `member name "n1 " must not begin or end with white space`},
		{"n1", "each entry must be name=peer-url"},
		{"n1=", "each entry must be name=peer-url"},
	}
	for _, tt := range tests {
		_, err := ParseInitialCluster(tt.in)
		want := fmt.Sprintf("--initial-cluster %q: %s", tt.in, tt.want)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tt.in, err, want)
		}
	}
	got, err := ParseInitialCluster(" a b=http://a:1, $x=http://b:1,a b=http://c:1")
	if err != nil || len(got) != 2 || got[0].Name != "a b" || len(got[0].URLs) != 2 || got[1].Name != "$x" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestSameURLsCanonical(t *testing.T) {
	if !SameURLs([]string{"HTTP://A:1", "http://b:2"}, []string{"http://b:2", "http://a:1"}) {
		t.Error("two spellings of the same URLs differ")
	}
	if SameURLs([]string{"http://a:1"}, []string{"http://a:2"}) {
		t.Error("different URLs are the same")
	}
}

// TestParseInitialClusterUnstarted: a member not started yet has no name in etcd's API, so the
// environment etcdctl prints for a join lists it as "=URL"; it is read, and matched by its URLs.
func TestParseInitialClusterUnstarted(t *testing.T) {
	got, err := ParseInitialCluster("=http://a:1,b=http://b:1")
	if err != nil || len(got) != 2 || got[0].Name != "" || got[1].Name != "b" {
		t.Fatalf("got %+v, %v", got, err)
	}
}
