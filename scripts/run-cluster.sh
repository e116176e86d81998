#!/usr/bin/env bash
# Starts a local 3-member cluster on 127.0.0.1 from bin/clusterd and waits; Ctrl-C stops the
# members and keeps their data, so running it again restarts the same cluster.
#
#   infra0  client http://127.0.0.1:2379   peer http://127.0.0.1:2380
#   infra1  client http://127.0.0.1:22379  peer http://127.0.0.1:22380
#   infra2  client http://127.0.0.1:32379  peer http://127.0.0.1:32380
#
# DATA_DIR (default ./data) holds infraN/ and infraN.log.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${DATA_DIR:-data}
mkdir -p "$data"
cluster="infra0=http://127.0.0.1:2380,infra1=http://127.0.0.1:22380,infra2=http://127.0.0.1:32380"
pids=()
stop() {
	trap - INT TERM
	echo
	echo "stopping the members (data kept in $data/)"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	exit 0
}
trap stop INT TERM
for i in 0 1 2; do
	port=$([ "$i" = 0 ] && echo "" || echo "$((i + 1))")
	bin/clusterd --name "infra$i" --data-dir "$data/infra$i" \
		--listen-client-urls "http://127.0.0.1:${port}2379" --advertise-client-urls "http://127.0.0.1:${port}2379" \
		--listen-peer-urls "http://127.0.0.1:${port}2380" --initial-advertise-peer-urls "http://127.0.0.1:${port}2380" \
		--initial-cluster "$cluster" --initial-cluster-token local-cluster \
		>>"$data/infra$i.log" 2>&1 &
	pids+=($!)
done
endpoints=127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379
for _ in $(seq 1 100); do
	if bin/clusterctl --endpoints "$endpoints" member list >/dev/null 2>&1; then
		break
	fi
	sleep 0.1
done
bin/clusterctl --endpoints "$endpoints" member list -w table
cat <<TXT

A 3-member cluster is running (logs: $data/infra*.log). In another shell:
  bin/clusterctl member list -w table
  bin/clusterctl member add infra3 --peer-urls=http://127.0.0.1:12380 --learner
Ctrl-C stops it; the data stays in $data/.
TXT
wait "${pids[@]}"
