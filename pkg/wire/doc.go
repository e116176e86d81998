// Package wire declares clusterd's own names on the client port, beside etcd's API, once for
// both binaries: the calls etcd's API has no room for, their messages, and the request metadata
// keys that go with them (docs/wire.md). It imports only pkg/membership, whose values the
// messages carry.
//
// Invariants:
//   - A name here is on the wire: never renamed. A field is added, never renamed or removed.
//   - A clusterd-own call's request and answer are google.protobuf.BytesValue messages whose
//     value is the JSON of the types below: a server that does not know the call (etcd, an older
//     clusterd) answers codes.Unimplemented, and nothing else needs generated code.
package wire
