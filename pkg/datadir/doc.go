// Package datadir is the offline work on a member's data directory and on snapshot files, shared
// by clusterd and clusterctl: the first state of a member of a new cluster, from --initial-cluster
// or from a snapshot file, and reads snapshot files.
//
// Invariants:
//   - Every member of a new cluster derives the same member IDs (from its sorted peer URLs and
//     the cluster token) and the same cluster ID (from the member IDs and the token), so a
//     cluster bootstraps without talking.
//   - A new member's data starts as one snapshot at index 1, term 1, holding the whole initial
//     membership: there are no bootstrap entries to apply.
//   - A snapshot file is a consistent copy of a member's database followed by the SHA-256 of
//     that copy (etcd's layout); a file whose checksum does not match is never used.
//   - Restore never writes into a directory that holds anything.
package datadir
