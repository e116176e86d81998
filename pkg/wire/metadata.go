package wire

// Request metadata on the client port.
const (
	// MemberName is MemberAdd's new member's name, stored with the member from the start.
	MemberName = "clusterd-member-name"
	// DryRun, "true" on a change: every check runs, nothing is proposed.
	DryRun = "clusterd-dry-run"
	// ReadyWait is a Go duration on MemberPromote: how long the leader may wait for the learner.
	ReadyWait = "clusterd-ready-wait"
)

// Response header metadata on the client port, and on the peer port where a change is
// forwarded to the leader.
const (
	// Members is every Cluster answer's JSON list of {id, name, started}.
	Members = "clusterd-members-bin"
	// Leader is the leader's ID in 16 hex digits, empty without one.
	Leader = "clusterd-leader"
	// DryRunReport is a dry run's JSON report beside its verdict, accepted or refused: a gRPC
	// call answers a status or a message, and a dry run's verdict is both.
	DryRunReport = "clusterd-dry-run-bin"
)

// PeerURLs is the raft stream's metadata naming its sender's peer URLs.
const PeerURLs = "clusterd-peer-urls"
