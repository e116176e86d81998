// Command floor is the least a Go client built on etcd's generated API can do to ask a member for
// its member list: dial one endpoint, make one call through etcdserverpb.ClusterClient
// (MemberList, linearizable, the request `clusterctl member list` sends by default), write the
// number of members, exit. Given a CA
// file, a certificate and a key after the address (`floor HOST:PORT CACERT CERT KEY`), it makes
// the same call over TLS with that client certificate, as `--cacert/--cert/--key` do: the
// handshake's own cost is the difference between the two.
//
// It is the floor that `make bench` measures `clusterctl member list` against, in the same run
// and on the same cluster, so the ratio between them is what clusterctl itself costs: flag
// parsing, package initialisation, decoding and printing.
//
// Guarantees:
//   - Built and run the way clusterctl is: a static binary built with the flags and build tags
//     of `make build`, and the connection left to the kernel at exit.
//   - The call goes through etcd's generated etcdserverpb.ClusterClient and nothing else is
//     linked in (no flags, no logging, no printing), so what is paid for is grpc's and the
//     generated code's start-up and the call.
//   - Exit status 0 only when the member answered; 1 with one line on stderr otherwise.
package main
