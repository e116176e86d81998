#!/usr/bin/env bash
# install-promtool.sh: make promtool available for the tests that lint /metrics and unit-test the
# shipped alert rules, from Debian's prometheus package (which also brings the prometheus server
# an end-to-end alert test runs). Called from the tests, as scripts/build-etcd.sh is.
#
# Usage: scripts/install-promtool.sh
#   Prints the absolute path of promtool. Installs only when promtool is missing, and only as
#   root with apt-get; otherwise says why on stderr and exits 1 (the tests then skip, saying so).
#   Concurrent runs (go test runs packages in parallel) are serialised by a lock, and the second
#   finds promtool installed.
set -euo pipefail

if p=$(command -v promtool); then
	echo "$p"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "promtool is not installed, and installing Debian's prometheus package needs root" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "promtool is not installed, and there is no apt-get to install Debian's prometheus package" >&2
	exit 1
fi
exec 9>"${TMPDIR:-/tmp}/clusterctl-install-promtool.lock"
flock 9
if ! command -v promtool >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	# A machine whose package lists were never fetched knows no prometheus package: fetch them
	# only then, since an update takes far longer than the install.
	apt-get install -y -qq --no-install-recommends prometheus >&2 ||
		{ apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends prometheus >&2; }
fi
command -v promtool
