// Package wire declares, once for both binaries, what clusterd sends beyond etcd's v3 API
// (docs/wire.md): the gRPC metadata keys of the client port and of the peer port, and the one
// place membership's values become clusterd's own messages and back. The messages and services
// themselves are declared in clusterdpb/clusterd.proto, whose generated Go is checked in
// (`make proto`). etcd ignores every key and answers every clusterd call codes.Unimplemented,
// which is what lets clusterctl talk to etcd and etcdctl to clusterd. It imports only
// pkg/membership, whose values the messages carry, and clusterdpb.
//
// Invariants:
//   - A name here or in the .proto is on the wire: never renamed; a field is added under a new
//     number, never renumbered or reused. A change older members cannot read goes to a new
//     protocol version (clusterd.v3), which they answer Unimplemented.
//   - The -bin metadata keys carry protobuf messages of clusterdpb.
//   - Reading a message is total (a missing field is its zero value): what is read is checked by
//     whoever uses it.
package wire
