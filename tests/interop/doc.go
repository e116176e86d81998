// Package interop proves that clusterd and clusterctl speak etcd's v3 Cluster API the way real etcd
// 3.7.1 and etcdctl 3.7.1 do, in both directions:
//
//   - clusterctl manages a real 3-member etcd cluster (add a learner, start it from the printed
//     environment, promote, update, remove, list);
//   - etcdctl runs one scenario against clusterd and against etcd, and the two transcripts,
//     with IDs and ports replaced by names, must have the same shape: the same lines, the same
//     error lines, the same exit codes, the same JSON fields.
//
// etcd and etcdctl are built by scripts/build-etcd.sh (cached between runs); members are started
// through internal/testkit/cluster, the same code the end-to-end scripts use.
package interop
