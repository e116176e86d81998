// Package version is the version clusterctl and clusterd print: stamped by the build, or read
// from the module's build information. It imports nothing of this module, so both binaries and
// nothing else of either depend on it.
//
// It is the program's version, not the protocol's: clusterd's Maintenance.Status keeps answering
// etcd's version with a suffix (pkg/server/api.Version), which etcd's clients parse.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is set at link time by `make build`: -X with `git describe --tags --always --dirty`.
// Empty in a plain `go build`, where String falls back to the build information.
var Version string

// String is the program's version: the stamped one; else the VCS revision go build recorded
// (12 digits, "-dirty" when the tree had changes); else the module's version; else "devel".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	switch {
	case rev != "":
		return rev[:min(12, len(rev))] + dirty
	case info.Main.Version != "" && info.Main.Version != "(devel)":
		return info.Main.Version
	}
	return "devel"
}

// Go is the Go release the program was built with.
func Go() string { return runtime.Version() }
