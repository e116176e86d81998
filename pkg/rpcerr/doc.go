// Package rpcerr is the registry of the errors clusterd answers with and clusterctl tells
// apart: each with its gRPC code and its message. Both binaries use it (the server's packages
// define their error variables as its values, the client hands them out under its own names),
// so it imports nothing of this module.
//
// Invariants:
//   - A message is the error's identity. etcd's own clients turn these texts into typed errors
//     letter for letter, and real etcd sends some of them with another code ("not enough
//     started members" comes as Unknown), so errors.Is and FromStatus match by message alone and
//     a message is registered once. Never reword a message.
//   - The code of an entry is the one clusterd answers with; a message travels with no other.
//   - Status and FromStatus are inverse on every entry: an error sent with Status and read back
//     with FromStatus is the registry's own value, so errors.Is holds after any number of hops
//     between members.
//   - The registry is fixed at start-up: entries are declared in errors.go and nowhere else, and
//     the contract test walks every one of them against the contract's table, written out in
//     the test so that a changed code or message fails there (docs/design.md, Errors on the
//     wire, is the same table for readers).
package rpcerr
