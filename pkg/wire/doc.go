// Package wire declares, once for both binaries, what clusterd sends beyond etcd's v3 API
// (docs/wire.md): the gRPC metadata keys of the client port and of the peer port, and the calls
// etcd's API has no room for, with their messages. etcd ignores every key and answers every call
// codes.Unimplemented, which is what lets clusterctl talk to etcd and etcdctl to clusterd. It
// imports only pkg/membership, whose values the messages carry.
//
// Invariants:
//   - A name here is on the wire: never renamed; a field is added, never renamed or removed.
//   - A clusterd-own call's request and answer are google.protobuf.BytesValue messages whose
//     value is the JSON of the types below.
package wire
