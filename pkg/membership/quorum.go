package membership

import "maps"

// Peers is raft's view of the members at the leader when a change is proposed.
type Peers struct {
	Leader ID
	// Started holds the members whose process has run: those that published themselves once,
	// and those whose raft progress at this leader has acknowledged entries; the leader too.
	Started map[ID]bool
	// Connected holds the members the leader heard from within the last election timeout,
	// the leader included.
	Connected map[ID]bool
}

// QuorumReport describes the voting configuration before and after a change, for the strict
// reconfiguration check and for a dry run.
type QuorumReport struct {
	Voters          int `json:"voters"`
	Learners        int `json:"learners"`
	StartedVoters   int `json:"startedVoters"`
	ConnectedVoters int `json:"connectedVoters"`
	Quorum          int `json:"quorum"`
	// FaultTolerance is how many voters may fail with the rest still forming a quorum; negative
	// when the connected voters are already short of one.
	FaultTolerance int `json:"faultTolerance"`
}

// Report summarises the voting configuration of c as seen through p.
func (c *Cluster) Report(p Peers) QuorumReport {
	voters := c.Voters()
	r := QuorumReport{Voters: len(voters), Learners: len(c.Members) - len(voters)}
	for _, id := range voters {
		if p.Started[id] {
			r.StartedVoters++
		}
		if p.Connected[id] {
			r.ConnectedVoters++
		}
	}
	return r.tally()
}

// tally sets the quorum of r's voters and its fault tolerance from its counts.
func (r QuorumReport) tally() QuorumReport {
	r.Quorum = r.Voters/2 + 1
	r.FaultTolerance = r.ConnectedVoters - r.Quorum
	return r
}

// Plus is r after a change that adds the given numbers of voters, learners, started voters and
// connected voters (negative to take away), quorum and fault tolerance counted again: the
// report of a change that cannot be sent yet, such as the steps after the first of a plan.
func (r QuorumReport) Plus(voters, learners, started, connected int) QuorumReport {
	r.Voters += voters
	r.Learners += learners
	r.StartedVoters += started
	r.ConnectedVoters += connected
	return r.tally()
}

// Strict is the rule of the strict reconfiguration check for a configuration after a change:
// ErrNotEnoughStarted when fewer voters have started than its quorum, ErrUnhealthy when fewer are
// connected to the leader.
func (r QuorumReport) Strict() error {
	if r.StartedVoters < r.Quorum {
		return ErrNotEnoughStarted
	}
	if r.ConnectedVoters < r.Quorum {
		return ErrUnhealthy
	}
	return nil
}

// CheckQuorum is the strict reconfiguration check: it refuses ch when the configuration after it
// would have fewer started voters than its quorum (ErrNotEnoughStarted), or fewer voters
// connected to the leader than its quorum (ErrUnhealthy). A member whose peer URLs change is
// counted as neither, since it is unreachable until it restarts at its new address.
//
// Adding a voter to a one-voter cluster is allowed although the pair cannot commit until the
// new member starts: that is how a cluster restarted from one member grows back.
func (c *Cluster) CheckQuorum(ch Change, p Peers) (before, after QuorumReport, err error) {
	before = c.Report(p)
	next, err := c.Apply(ch)
	if err != nil {
		return before, before, err
	}
	if ch.Kind == KindUpdate {
		p.Started, p.Connected = maps.Clone(p.Started), maps.Clone(p.Connected)
		delete(p.Started, ch.Member.ID)
		delete(p.Connected, ch.Member.ID)
	}
	after = next.Report(p)
	if ch.Kind == KindAdd && !ch.Member.IsLearner && before.Voters == 1 && before.StartedVoters == 1 {
		return before, after, nil
	}
	return before, after, after.Strict()
}
