// Package fsync makes file-system changes durable. It is shared by both binaries: clusterd's
// storage and clusterctl's snapshot save write a file beside its final name and rename it.
//
// Invariants:
//   - A rename is durable only once the directory that holds it has been synced: Dir is called
//     after every rename that must survive a crash, never before.
//   - Nothing here retries or hides an error: a failed sync means the change may not be on disk.
package fsync
