#!/usr/bin/env bash
# Starts a local 3-member cluster on 127.0.0.1 from bin/clusterd and waits; Ctrl-C stops the
# members and keeps their data, so running it again restarts the same cluster.
#
#   infra0  client http://127.0.0.1:2379   peer http://127.0.0.1:2380
#   infra1  client http://127.0.0.1:22379  peer http://127.0.0.1:22380
#   infra2  client http://127.0.0.1:32379  peer http://127.0.0.1:32380
#
# PORT_OFFSET (default 0) is added to every port, so that a second cluster can run beside this
# one or beside another on these ports: PORT_OFFSET=100 serves infra0 on 2479 and 2480, infra1 on
# 22479 and 22480, infra2 on 32479 and 32480. The runbooks (docs/runbooks) take the same variable.
# A cluster's data remembers its ports: restart it with the offset it was started with.
#
# DATA_DIR (default ./data) holds infraN/ and infraN.log.
#
# With --tls (make run TLS=1) the same members serve https:// on both ports with client
# certificate authentication, as kubeadm sets etcd up. A CA and the certificates of the members
# and of clusterctl are made with openssl under DATA_DIR/pki (default ./data-tls), once; the
# script prints the member table, as without --tls, and the CLUSTERCTL_* variables that reach
# the cluster; it checks them first, waiting for the members through them.
set -euo pipefail
cd "$(dirname "$0")/.."
tls=
case "${1:-}" in
"") ;;
--tls) tls=1 ;;
*)
	echo "usage: scripts/run-cluster.sh [--tls]" >&2
	exit 2
	;;
esac
off=${PORT_OFFSET:-0}
# Every port stays between 1024 and 65535: the highest is 32380 before the offset.
if ! [[ "$off" =~ ^-?[0-9]+$ ]] || [ "$off" -lt -1355 ] || [ "$off" -gt 33155 ]; then
	echo "PORT_OFFSET must be a whole number from -1355 to 33155 (every port from 1024 to 65535), not \"$off\"" >&2
	exit 2
fi
# p prints port $1 moved by the offset.
p() { echo $((off + $1)); }
scheme=http
data=${DATA_DIR:-data}
if [ -n "$tls" ]; then
	scheme=https
	data=${DATA_DIR:-data-tls}
fi
# clusterd refuses an ETCD_* variable it does not implement, and one it does would change these
# members: start them from this script's flags alone.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^ETCD_' || true)
mkdir -p "$data"

# makecerts makes, once, a CA, a certificate per member (server and client use, for both ports,
# valid for 127.0.0.1 and localhost) and a client certificate with CN root for clusterctl.
makecerts() {
	local pki=$1
	if ! command -v openssl >/dev/null; then
		echo "run-cluster.sh --tls needs openssl to make the certificates: sudo apt-get install openssl" >&2
		exit 1
	fi
	[ -f "$pki/client.pem" ] && return
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=clusterd local CA" \
		-keyout "$pki/ca-key.pem" -out "$pki/ca.pem" 2>/dev/null
	local name ext
	for name in infra0 infra1 infra2 infra3 root; do
		if [ "$name" = root ]; then
			ext="extendedKeyUsage=clientAuth"
		else
			ext="extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
		fi
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" \
			-keyout "$pki/$name-key.pem" -out "$pki/$name.csr" 2>/dev/null
		openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca-key.pem" -CAcreateserial \
			-days 365 -extfile <(printf 'keyUsage=digitalSignature,keyEncipherment\n%s\n' "$ext") \
			-out "$pki/$name.pem" 2>/dev/null
		rm -f "$pki/$name.csr"
	done
	mv "$pki/root.pem" "$pki/client.pem"
	mv "$pki/root-key.pem" "$pki/client-key.pem"
	chmod 600 "$pki"/*-key.pem
}

pki="$(pwd)/$data/pki"
if [ -n "$tls" ]; then
	makecerts "$pki"
fi
# tlsflags are member $1's TLS flags: its certificate on both ports, client certificates
# required on both.
tlsflags() {
	[ -n "$tls" ] || return 0
	echo "--cert-file=$pki/$1.pem --key-file=$pki/$1-key.pem --trusted-ca-file=$pki/ca.pem --client-cert-auth" \
		"--peer-cert-file=$pki/$1.pem --peer-key-file=$pki/$1-key.pem --peer-trusted-ca-file=$pki/ca.pem --peer-client-cert-auth"
}

cluster="infra0=$scheme://127.0.0.1:$(p 2380),infra1=$scheme://127.0.0.1:$(p 22380),infra2=$scheme://127.0.0.1:$(p 32380)"
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
	# shellcheck disable=SC2046 # tlsflags is a list of flags without spaces inside
	bin/clusterd --name "infra$i" --data-dir "$data/infra$i" \
		--listen-client-urls "$scheme://127.0.0.1:$(p "${port}2379")" --advertise-client-urls "$scheme://127.0.0.1:$(p "${port}2379")" \
		--listen-peer-urls "$scheme://127.0.0.1:$(p "${port}2380")" --initial-advertise-peer-urls "$scheme://127.0.0.1:$(p "${port}2380")" \
		--initial-cluster "$cluster" --initial-cluster-token local-cluster $(tlsflags "infra$i") \
		>>"$data/infra$i.log" 2>&1 &
	pids+=($!)
done

endpoints=127.0.0.1:$(p 2379),127.0.0.1:$(p 22379),127.0.0.1:$(p 32379)
if [ -n "$tls" ]; then
	endpoints=https://127.0.0.1:$(p 2379),https://127.0.0.1:$(p 22379),https://127.0.0.1:$(p 32379)
fi
# ctl runs clusterctl against these members: over TLS with the variables printed below, so the
# wait and the table check the very settings the user is told to export. They are not exported
# to this shell: the members were started before and do not see them either way.
ctl() {
	if [ -n "$tls" ]; then
		CLUSTERCTL_ENDPOINTS=$endpoints CLUSTERCTL_CACERT=$pki/ca.pem CLUSTERCTL_CERT=$pki/client.pem \
			CLUSTERCTL_KEY=$pki/client-key.pem bin/clusterctl "$@"
	else
		bin/clusterctl --endpoints "$endpoints" "$@"
	fi
}
# The cluster is ready when a linearizable member list shows all three members started (each has
# published its name and client URLs): the table below, and the user's first list, show them so.
# The wait ends as well when one of this script's members has stopped: the ports may be another
# cluster's by then.
alive() {
	for pid in "${pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || return 1
	done
}
for _ in $(seq 1 100); do
	alive || break
	if [ "$(ctl member list 2>/dev/null | grep -c ', started, ')" = 3 ]; then
		break
	fi
	sleep 0.1
done
ctl member list -w table

# moved is the line that gives the runbooks this cluster's offset, when it has one.
moved=
if [ "$off" != 0 ]; then
	moved="export PORT_OFFSET=$off"
fi
if [ -n "$tls" ]; then
	cat <<TXT

A 3-member cluster is running with TLS and client-certificate authentication on both ports
(logs: $data/infra*.log, certificates: $pki). In another shell:

export CLUSTERCTL_ENDPOINTS=$endpoints
export CLUSTERCTL_CACERT=$pki/ca.pem
export CLUSTERCTL_CERT=$pki/client.pem
export CLUSTERCTL_KEY=$pki/client-key.pem
export SCHEME=https
export MEMBER_TLS="$(tlsflags infra3)"
${moved:+$moved
}
  bin/clusterctl member list -w table
  bin/clusterctl member add infra3 --peer-urls=https://127.0.0.1:$(p 12380) --learner
  (infra3's certificate is $pki/infra3.pem, its key $pki/infra3-key.pem; SCHEME and
  MEMBER_TLS are what the runbooks in docs/runbooks start a member with)

etcdctl takes the same files: --cacert, --cert and --key.
Ctrl-C stops it; the data stays in $data/.
TXT
else
	cat <<TXT

A 3-member cluster is running (logs: $data/infra*.log). In another shell:
${moved:+export CLUSTERCTL_ENDPOINTS=$endpoints
$moved
}  bin/clusterctl member list -w table
  bin/clusterctl member add infra3 --peer-urls=http://127.0.0.1:$(p 12380) --learner
Ctrl-C stops it; the data stays in $data/.
TXT
fi
wait "${pids[@]}"
