// Package authz restricts clusterd's admin operations to the client certificates whose CN the
// --admin-cert-allowed-cn setting lists, as gRPC server interceptors on the client port.
//
// Invariants:
//   - Admin operations are every method of etcd's Cluster and Maintenance services except
//     MemberList and Status: membership changes, Snapshot and MoveLeader today, and any method
//     of those services added later until someone decides otherwise (deny by default). Methods
//     of other services (health) are open.
//   - With an empty list every caller may do everything: the TLS layer has already refused
//     clients the CA did not sign, which is etcd's behaviour without auth.
//   - The CN is read from the chain crypto/tls verified (credentials.TLSInfo.State.
//     VerifiedChains), never from a certificate merely presented; a call with no verified chain
//     (a plain listener beside the TLS one) is denied an admin operation when the list is set.
//   - A denial is etcd's own error, rpctypes.ErrGRPCPermissionDenied: gRPC code
//     PermissionDenied, message "etcdserver: permission denied", which etcd's clients and
//     clusterctl already map to a typed error. Denials happen before the handler runs, so
//     nothing is proposed.
package authz
