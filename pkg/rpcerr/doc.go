// Package rpcerr maps the errors that travel in an RPC answer to their gRPC code and message,
// for both binaries. etcd's errors come from etcd's rpctypes; clusterd's own are declared here.
// It imports nothing of this module.
//
// Invariants:
//   - A message is the error's identity: etcd's clients match the text, and real etcd sends
//     some errors with another code ("not enough started members" comes as Unknown), so
//     errors.Is and FromStatus match by message alone. A message is registered once and never
//     reworded.
//   - The code of an entry is the one clusterd answers with.
//   - Status and FromStatus are inverse on every entry, so errors.Is holds after any number of
//     hops between members.
//   - Entries are declared in errors.go only, fixed at start-up; the contract test checks each
//     against a table written out in the test (docs/design.md, Errors on the wire).
package rpcerr
