#!/usr/bin/env bash
# build-etcd.sh: build etcd and etcdctl at one pinned release from their published Go modules,
# for the interop tests and for comparing clusterd with the real thing.
#
# Usage: scripts/build-etcd.sh [CACHE_DIR]
#   CACHE_DIR defaults to .cache/etcd-v3.7.1 in the repository (git-ignored).
#   Prints two lines: the absolute path of etcd, then of etcdctl.
#
# `go install go.etcd.io/etcd/server/v3@v3.7.1` refuses to work because etcd's go.mod files carry
# replace directives, so a throwaway module that requires both modules is generated in a temporary
# directory and the two main packages are built from it. Only Go and the module proxy are needed.
# A second run finds both binaries in the cache and builds nothing; concurrent runs (go test runs
# packages in parallel) are serialised by a lock and each binary lands by an atomic rename.
set -euo pipefail

version=v3.7.1
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-$repo/.cache/etcd-$version}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
etcd=$cache/etcd
etcdctl=$cache/etcdctl

# built reports whether both binaries are present and are the pinned release; a half-written or
# older cache is rebuilt rather than trusted. Each binary's output is read whole before it is
# matched: piped into `grep -q`, which stops reading at the first match, a binary still writing
# its later lines dies of SIGPIPE, and pipefail then reports a good build as a bad one.
built() {
	local etcd_says etcdctl_says
	[ -x "$etcd" ] && [ -x "$etcdctl" ] &&
		etcd_says=$("$etcd" --version 2>/dev/null) &&
		etcdctl_says=$("$etcdctl" version 2>/dev/null) &&
		grep -qx "etcd Version: ${version#v}" <<<"$etcd_says" &&
		grep -qx "etcdctl version: ${version#v}" <<<"$etcdctl_says"
}

if ! built; then
	# The lock is held on a file descriptor, so it is released even if this script is killed.
	exec 9>"$cache/.lock"
	if command -v flock >/dev/null 2>&1; then
		flock -w 900 9 || {
			echo "build-etcd.sh: timed out waiting for another build of etcd to finish" >&2
			exit 1
		}
	fi
	if ! built; then
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/build-etcd.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		cat >"$tmp/go.mod" <<EOF
module buildetcd

go 1.26

require (
	go.etcd.io/etcd/etcdctl/v3 $version
	go.etcd.io/etcd/server/v3 $version
)
EOF
		# The build must not pick up a workspace or flags meant for this repository, and etcd's
		# releases are built without cgo.
		export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
		(
			cd "$tmp"
			echo "build-etcd.sh: building etcd and etcdctl $version into $cache" >&2
			# go get resolves every module the two main packages import and records their sums.
			go get "go.etcd.io/etcd/server/v3@$version" "go.etcd.io/etcd/etcdctl/v3@$version" >&2
			go build -trimpath -o "$tmp/etcd" go.etcd.io/etcd/server/v3
			go build -trimpath -o "$tmp/etcdctl" go.etcd.io/etcd/etcdctl/v3
		)
		mv -f "$tmp/etcd" "$etcd"
		mv -f "$tmp/etcdctl" "$etcdctl"
		if ! built; then
			echo "build-etcd.sh: the built binaries do not report version $version" >&2
			exit 1
		fi
	fi
fi

echo "$etcd"
echo "$etcdctl"
