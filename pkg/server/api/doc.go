// Package api serves etcd's v3 gRPC Cluster service, Maintenance.Status, Snapshot and MoveLeader on the client
// URLs, so that etcd's own clients work against clusterd unchanged.
//
// Invariants:
//   - A handler decodes, hands the change to the coordinator (which validates with the same
//     rules apply uses), and answers any error through rpcerr.Status: the error registry is
//     the only place a gRPC code is chosen.
//   - A dry run answers as the real change would, a refusal with the same status; its report
//     travels beside it in the clusterd-dry-run-bin header (docs/wire.md).
//   - Member.Name is empty on the wire for a member that has not started, as in etcd, so that
//     etcdctl's started/unstarted column stays right; names and the started flag of every
//     member travel in the clusterd-members-bin header (docs/wire.md).
package api
