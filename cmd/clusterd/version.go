package main

import (
	"fmt"
	"io"

	"github.com/clusterctl/clusterctl/pkg/server/api"
	"github.com/clusterctl/clusterctl/pkg/version"
)

// versionAsked reports whether the command line asks for the version, as etcd's --version
// does: it wins over every other flag, checked or not.
func versionAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--version", "-version":
			return true
		}
	}
	return false
}

// printVersion prints clusterd's version, the Go release, and the etcd API version its
// Maintenance.Status reports.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "clusterd version: %s\nGo version: %s\netcd API version: %s\n", version.String(), version.Go(), api.Version)
}
