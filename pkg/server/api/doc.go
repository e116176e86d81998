// Package api serves etcd's v3 gRPC Cluster service, Maintenance.Status, Snapshot and MoveLeader on the client
// URLs, so that etcd's own clients work against clusterd unchanged, and clusterd's own History
// and DryRun services beside them.
//
// Invariants:
//   - A handler decodes, hands the change to the coordinator (which validates with the same
//     rules apply uses), and answers any error through rpcerr.Status: the error registry is
//     the only place a gRPC code is chosen.
//   - A dry run is clusterd's DryRun service (docs/wire.md), judged by the leader with the same
//     checks as the change itself and authorized as it is; its verdict, a refusal included, is
//     the answer, the refusal the status the change itself would get.
//   - Member.Name is empty on the wire for a member that has not started, as in etcd, so that
//     etcdctl's started/unstarted column stays right; names and the started flag of every
//     member travel in the clusterd-members-bin header (docs/wire.md).
package api
