// Package crashpoint marks the places in clusterd's write path (and in clusterctl's restore and
// member replace) where the tests in tests/chaos make a process die: Hit("name") is a crash point.
//
// Built without the crashpoints tag, as `make build` and every release builds, Hit and HitIf are
// empty functions that the compiler inlines away, and the package reads no environment: the
// binaries carry no way to arm one (tests/chaos checks that armed.go is left out without the
// tag). Built with -tags=crashpoints, the variable CLUSTERD_CRASHPOINT=name[:nth], read once
// when the program starts, arms the point name: its nth hit (the first when nth is left out)
// writes one line to stderr, "crashpoint: name hit N: SIGKILL", and sends SIGKILL to the
// process itself, so that it ends as abruptly as a power cut ends it: no deferred call, no
// flush, no exit handler runs.
//
// Invariants:
//   - A crash point is one line in the code it marks, and changes nothing there: no argument is
//     evaluated for its side effects, and HitIf's condition is a plain comparison.
//   - At most one point is armed per process; names are the constants of Names, so that a test
//     arming a name that no longer exists fails instead of never crashing.
package crashpoint

// Names are every crash point, for the tests that arm them at random. Each is one call site.
var Names = []string{
	RaftSaveBefore, RaftSaveAfter, ApplyBefore, MembershipSaveBefore, MembershipSaveAfter,
	SnapshotSendBefore, SnapshotReceive, RestoreRenameBefore, RestoreRenameAfter, ReplaceRemovedFirst,
}

// The crash points.
const (
	// pkg/server/raftnode persist: before and after the bbolt commit of a Ready's raft state.
	RaftSaveBefore = "raft-save-before"
	RaftSaveAfter  = "raft-save-after"
	// pkg/server/raftnode applyEntry: an entry is committed and durable (an earlier commit wrote
	// it), and is about to be applied.
	ApplyBefore = "apply-before"
	// pkg/server/raftnode persist, when the commit also writes the applied membership.
	MembershipSaveBefore = "membership-save-before"
	MembershipSaveAfter  = "membership-save-after"
	// pkg/server/transport: a snapshot about to be sent; a snapshot received, before raft has it.
	SnapshotSendBefore = "snapshot-send-before"
	SnapshotReceive    = "snapshot-receive"
	// pkg/datadir install: before and after the rename of DIR.restoring to DIR.
	RestoreRenameBefore = "restore-rename-before"
	RestoreRenameAfter  = "restore-rename-after"
	// cmd/clusterctl member replace: a dead old member removed, the new member not added yet.
	ReplaceRemovedFirst = "replace-removed-first"
)

// EnvVar arms a crash point in a build with the crashpoints tag.
const EnvVar = "CLUSTERD_CRASHPOINT"
