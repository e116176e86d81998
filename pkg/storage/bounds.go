package storage

// The bounds of raft's state that no cluster reaches. raft adds one to a term for each campaign
// and one to an index for each entry, and panics once either would wrap: a member whose stored
// term is past MaxTerm got it from a forged message (or a damaged file), never from elections,
// and cannot be trusted to campaign again. Both leave 2^63 elections or entries of headroom, so a
// member's own progress from below them never wraps.
const (
	// MaxTerm is the highest term a member takes from a peer or keeps in its HardState.
	MaxTerm = 1 << 63
	// MaxIndex is the highest log index a peer's message may name.
	MaxIndex = 1 << 63
)
