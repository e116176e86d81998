package datadir

import (
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
