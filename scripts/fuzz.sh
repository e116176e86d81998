#!/usr/bin/env bash
# fuzz.sh FUZZTIME PKG:FUNC...   runs each Go fuzz target for FUZZTIME, one at a time (go test runs
# one -fuzz target per invocation). A crash is written to the package's testdata/fuzz, where it
# then runs as an ordinary test, and fails this script.
#
# Go's fuzz coordinator can end a run with "context deadline exceeded" at the deadline without
# any failing input (golang/go#75804, in go1.26; a few runs in a hundred here): such a run, and
# only such a run, is tried up to twice more, so that make test fails on crashes, not on that
# race. Minimization is bounded by count, so a run ends near FUZZTIME even when every input opens
# a database.
#
# The targets' temporary files go to a directory of this script's own, removed when it ends: a
# fuzzing worker the coordinator stops at the deadline may not run its cleanup (t.TempDir).
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=$1
shift
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/clusterd-fuzz.XXXXXX") || exit
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
for t in "$@"; do
	pkg=${t%%:*} fn=${t##*:}
	for try in 1 2 3; do
		echo "go test -run '^\$' -fuzz '^$fn\$' -fuzztime $fuzztime -fuzzminimizetime 10x $pkg"
		out=$(go test -run '^$' -fuzz "^$fn\$" -fuzztime "$fuzztime" -fuzzminimizetime 10x "$pkg" 2>&1)
		code=$?
		printf '%s\n' "$out" | grep -v '^fuzz: elapsed'
		[ "$code" = 0 ] && break
		if [ "$try" -lt 3 ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
			echo "fuzz.sh: $fn ended on Go's coordinator deadline race without a failing input; once more"
			continue
		fi
		exit "$code"
	done
done
