// Package storage keeps a member's durable state in one bbolt file, <data-dir>/member.db.
//
// Buckets (stored on disk: never rename):
//
//	meta     the data format, member ID, cluster ID, name, HardState, the last snapshot, the
//	         applied index, and the tombstone of a removed member
//	log      raft entries by index (8-byte big-endian keys), from the snapshot on
//	members  the applied membership, one JSON value per member ID
//	removed  every member ID ever removed
//	history  the membership history recorded since the stored snapshot (which holds the rest),
//	         one clusterd.v2.Event per sequence number (history.go); missing after a snapshot
//	         until the next change
//
// A raft snapshot's data is the applied membership, history included, as a generated
// clusterd.v2.MembershipSnapshot (SnapshotData, SnapshotCluster); it is defined here so that a
// data dir can be written offline (a bootstrap, a snapshot restore) without the Ready loop's
// package.
//
// Invariants:
//   - One format (dataFormat, in meta): a database of another (a development build's before the
//     first release, or a later version's) is refused as a *FormatError, never read or
//     converted. A released format is read by every later version.
//   - Save writes everything one Ready produced in a single transaction: the snapshot, the
//     HardState, the new entries, the membership they changed (its history included) and the
//     applied index. A crash leaves either all of it or none, so the applied index always names exactly the entries
//     the membership reflects, and replay after a restart never applies an entry twice.
//   - The applied index never exceeds the persisted HardState's commit index.
//   - Once the tombstone is written it is never cleared.
//   - bbolt never opens a file whose integrity is not known (Open, ViewFile): CheckFile first
//     walks its structure with bounds checks and without mmap, and a damaged file is refused as
//     a *CorruptError with nothing written to it. bbolt trusts every page it maps; a page past
//     the end of the file faults, in goroutines of its own too, where no recover reaches. The one
//     file opened unchecked is the new one Create builds.
//   - LoadFile reads a data directory without writing to it (read-only, checked first), for the
//     offline tools: a database a running member holds is ErrInUse.
package storage
