// Package runbooks runs every runbook in docs/runbooks as written: each ```sh block, in order,
// in bash with -euo pipefail, from a directory laid out like the repository (bin/, scripts/,
// data/) with a fresh local cluster started by scripts/run-cluster.sh, the script behind
// `make run`. A runbook whose commands stop working fails here, so the docs cannot drift from
// the code.
//
// The runbooks use the ports of `make run` moved by PORT_OFFSET. The tests choose an offset
// whose every moved port is free, below the ephemeral range, and shared with no other test of
// the binary (freeport.Offset), and give it to the script and to every block with the
// CLUSTERCTL_ENDPOINTS the script prints for it: they run beside a developer's own cluster on
// the usual ports, and never touch it.
//
// The runbooks of an outage (machine-died, majority-loss-etcd, replace-member) run a second time
// on etcd 3.7.1 with TLS on both ports and auth on, laid out as make run's cluster: the blocks
// are the same, and the variables the runbooks document (SCHEME, MEMBER_TLS, MEMBER_BIN, the
// operator's CLUSTERCTL_* TLS files and login or a context) are the only difference.
package runbooks
