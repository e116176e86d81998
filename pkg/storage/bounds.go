package storage

// The bounds of raft's state that no cluster reaches. raft adds one to a term for each campaign
// and one to an index for each entry, and panics once either would wrap: a member whose stored
// term is past MaxTerm got it from a forged message (or a damaged file), never from elections,
// and cannot campaign again without panicking. Both leave 2^63 elections or entries of
// headroom, so a member's own progress from below them never wraps.
const (
	// MaxTerm is the highest term a member takes from a peer or keeps in its HardState.
	MaxTerm = 1 << 63
	// MaxIndex is the highest log index a peer's message may name.
	MaxIndex = 1 << 63
	// MaxTermStep bounds how far above the term a member held when its process started a peer's
	// message may be (with one more term an election timeout since). A term rises by one a
	// campaign: with pre-vote (which clusterd always runs) only once a majority agreed that the
	// leader is gone, without it once an election timeout per campaigning member. A member that
	// comes back after missing 2^32 elections, one a second, would have been away 136 years: a
	// message 2^32 terms ahead is forged. Counted from the term at the start, not the current
	// one, no run of accepted messages ratchets a term toward MaxTerm.
	MaxTermStep = 1 << 32
)
