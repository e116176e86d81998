#!/bin/sh
# genproto.sh: generates the Go of pkg/wire/clusterdpb/*.proto into that package (make proto),
# and writes generated.sum beside it: the SHA-256 of this script, of each .proto and of each
# generated file, and the versions of the modules the generation reads. TestGeneratedUpToDate
# checks that file against the tree, so CI needs none of the tools below: an edit to a .proto or
# to this script, a generated file edited by hand, or a module bumped without `make proto` fails.
# No protoc: buf is a Go module, and so are both plugins. They are built once per version under
# .cache/proto (never in git): buf and protoc-gen-go-grpc at the versions pinned here,
# protoc-gen-go at the version go.mod requires, so the generated code matches the runtime.
# raft.proto, which clusterd.proto imports for raft's Message, is raft's own, read from the
# module go.mod requires; its Go is raft's package.
set -eu
BUF_VERSION=v1.75.0
GRPC_PLUGIN_VERSION=v1.6.2

cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/pkg/wire/clusterdpb
GO=${GO:-go}

pbgo_version=$($GO list -m -f '{{.Version}}' google.golang.org/protobuf)
tools=$root/.cache/proto/buf-$BUF_VERSION.grpc-$GRPC_PLUGIN_VERSION.pbgo-$pbgo_version
if [ ! -x "$tools/buf" ] || [ ! -x "$tools/protoc-gen-go" ] || [ ! -x "$tools/protoc-gen-go-grpc" ]; then
	# Built beside, then renamed: another tree sharing .cache may build at the same time.
	mkdir -p "$root/.cache/proto"
	build=$(mktemp -d "$root/.cache/proto/build.XXXXXX")
	GOBIN=$build GOFLAGS=-mod=mod $GO install github.com/bufbuild/buf/cmd/buf@$BUF_VERSION
	GOBIN=$build GOFLAGS=-mod=mod $GO install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$GRPC_PLUGIN_VERSION
	$GO build -o "$build/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
	if ! mv -T "$build" "$tools" 2>/dev/null; then
		rm -rf "$build" # the other tree won
	fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in/clusterd/v2" "$work/out"
cp pkg/wire/clusterdpb/clusterd.proto pkg/wire/clusterdpb/members.proto "$work/in/clusterd/v2/"
cp "$($GO list -m -f '{{.Dir}}' go.etcd.io/raft/v3)/raftpb/raft.proto" "$work/in/raft.proto"
chmod u+w "$work/in/raft.proto"
printf 'version: v2\n' >"$work/in/buf.yaml"
cat >"$work/buf.gen.yaml" <<EOF
version: v2
plugins:
  - local: $tools/protoc-gen-go
    out: $work/out
    opt: paths=source_relative
  - local: $tools/protoc-gen-go-grpc
    out: $work/out
    opt: paths=source_relative
EOF
(cd "$work/in" && "$tools/buf" generate --template "$work/buf.gen.yaml" --path clusterd/v2 .)
cp "$work/out/clusterd/v2/"*.go "$out/"
{
	echo "# written by scripts/genproto.sh (make proto); checked by TestGeneratedUpToDate"
	$GO list -m google.golang.org/protobuf go.etcd.io/raft/v3
	sha256sum scripts/genproto.sh pkg/wire/clusterdpb/*.proto pkg/wire/clusterdpb/*.pb.go
} >"$out/generated.sum"
