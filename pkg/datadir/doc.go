// Package datadir is the offline work on a member's data directory and on snapshot files, shared
// by clusterd and clusterctl: the IDs and the first state of a member of a new cluster, from
// --initial-cluster (Create) or from a snapshot file (Restore), reading and checking snapshot
// files (ReadSnapshot), and reading stopped members' data directories, clusterd's or etcd's
// (ReadDir), checking the membership they or snapshot files store (Check) and choosing the one
// to restart from after a majority is lost (Rank). It reports what it did in its own result types (SnapshotInfo, Restored)
// and what it refused in typed errors (errors.go), which callers map without matching text.
//
// Invariants:
//   - It imports nothing of the server's runtime (pkg/server/...): clusterctl uses it, and
//     `go list -deps ./cmd/clusterctl` names no pkg/server package.
//   - Every member of a new cluster derives the same member IDs (from its sorted peer URLs and
//     the cluster token) and the same cluster ID (from the member IDs and the token), so a
//     cluster bootstraps without talking. DefaultClusterToken is the one default token of both
//     binaries, so a restore and a start with the same flags derive the same IDs.
//   - A member's entry in --initial-cluster holds exactly its advertised peer URLs (Local), the
//     one check clusterd and snapshot restore share.
//   - A new member's data starts as one snapshot at index 1, term 1, holding the whole initial
//     membership: there are no bootstrap entries to apply.
//   - A snapshot file is a consistent copy of a member's database followed by the SHA-256 of
//     that copy (etcd's layout); a file whose checksum does not match is never used.
//   - bbolt opens a snapshot's database only through storage (ViewFile, Open), which checks its
//     structure first (storage.CheckFile): a damaged one, clusterd's or etcd's, is a
//     *SnapshotContentError, never a crash.
//   - ReadDir and Check never write into a data directory: bbolt opens it read-only after
//     storage.CheckFile, no lock file or directory is made, etcd's WAL and snap files are only
//     read. A database another process holds for writing is an *InUseError, nothing read.
//   - etcd's WAL and snap files are read with etcd's record types but not its storage/wal package
//     (wal.go: its framing and chained CRC, with bounds on every length); a damaged one is a *WALError,
//     never a panic (FuzzReadWAL, FuzzReadSnapFile).
//   - Rank ranks the directories of one cluster only, and never chooses a removed member's, a
//     learner's or one whose membership Check finds unsound.
//   - Every line of Rank's steps is a whole command for a POSIX shell: a member's start line has
//     its TLS flags on each https:// port, every clusterctl line the flags StepOptions gives, a
//     member added back is promoted by the ID its add wrote. Where a value cannot be known (a
//     TLS file, a password, a directory not given) the line holds a named placeholder and its
//     step says what to put there; a password itself is never in a step.
//   - Restore runs each of its checks once, all before it creates anything: a refused restore
//     writes nothing, and it never writes into a directory that holds anything. The restored
//     cluster records every ID of the old one as removed and never has the old cluster's ID.
package datadir
