// Package wire names what clusterd sends beyond etcd's v3 API, once for both binaries
// (docs/wire.md): the gRPC metadata keys of the client port and of the peer port. etcd ignores
// every one of them, which is what lets clusterctl talk to etcd and etcdctl to clusterd.
//
// Invariants:
//   - The names are on the wire between versions: never rename one; add a new name instead.
//   - It imports nothing, so both binaries and every package of either may import it.
package wire
