// Package runbooks runs every runbook in docs/runbooks as written: each ```sh block, in order,
// in bash with -euo pipefail, from a directory laid out like the repository (bin/, scripts/,
// data/) with a fresh local cluster started by scripts/run-cluster.sh, the script behind
// `make run`. A runbook whose commands stop working fails here, so the docs cannot drift from
// the code.
//
// The runbooks use the fixed ports of `make run`; the test refuses to start while anything
// listens on them, so it never touches a developer's own cluster.
package runbooks
