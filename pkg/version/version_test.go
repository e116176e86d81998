package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tt := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}}, "0123456789ab"},
		{"dirty", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, "0123456789ab-dirty"},
		{"module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"nothing", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := fromBuildInfo(&tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestStampWins(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v9.9.9-3-gabc"
	if got := String(); got != Version {
		t.Errorf("String() = %q", got)
	}
}
