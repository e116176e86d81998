// Package registry is the layout of etcd's v3 discovery registry (etcd
// server/etcdserver/api/v3discovery) and the pure rules both binaries read it by: clusterd
// registers a member and waits on it (pkg/server/discovery), clusterctl creates a token and shows
// it (discovery new, discovery status). It reads the keys in etcd's generated types and builds the
// one create-if-absent transaction both binaries write with (CreateTxn); it does no I/O and
// imports neither binary's packages.
//
// The layout, etcd's letter for letter, under one token:
//
//	/_etcd/registry/<token>/_config/size         the expected size, a decimal number
//	/_etcd/registry/<token>/members/<id in hex>  "<name>=<peer url>[,<name>=<peer url>...]"
//
// and one key etcd does not have, which etcd's members never read:
//
//	/_etcd/registry/<token>/_clusterd/bootstrapped/<id in hex>   written once a member left
//	                                                              discovery with the full cluster
//
// Invariants:
//   - The cluster is the first <size> registrations by create revision, as etcd takes it, so
//     every member that has seen the registrations up to some revision derives the same
//     cluster. A registration that takes a name or a peer URL of an earlier one is passed over
//     (etcd would fail to start on the duplicate instead); it never changes who is in.
//   - A registration's key never changes once written: a member's ID derives from its peer
//     URLs and the token, so a member that starts again finds its own registration, and a put
//     that would change an existing one is never made.
package registry
