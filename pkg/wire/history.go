package wire

import (
	"time"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// The membership history call (docs/wire.md, docs/commands/member-history.md).
const (
	HistoryService = "clusterd.v1.History"
	HistoryMethod  = "List"
	// HistoryList is the full method name clients invoke and authorization sees.
	HistoryList = "/" + HistoryService + "/" + HistoryMethod
)

// HistoryRequest asks for the events of the membership history, oldest first.
type HistoryRequest struct {
	// Linearizable reads the history through the leader; otherwise the member answers from what
	// it has applied.
	Linearizable bool `json:"linearizable,omitempty"`
	// Member keeps the events of one member: its ID in hex or its name (a removed member's too).
	Member string `json:"member,omitempty"`
	// Since keeps the events proposed at or after it; events without a time (written by an
	// older version) are left out then.
	Since time.Time `json:"since,omitzero"`
	// Limit keeps the newest Limit events of those selected; zero keeps them all.
	Limit int `json:"limit,omitempty"`
}

// HistoryAnswer is the events selected, oldest first, and how many older events the answering
// member has dropped to keep its history bounded.
type HistoryAnswer struct {
	ClusterID membership.ID      `json:"clusterID"`
	MemberID  membership.ID      `json:"memberID"`
	RaftTerm  uint64             `json:"raftTerm"`
	Events    []membership.Event `json:"events"`
	Dropped   uint64             `json:"dropped"`
}

// MDVia is request metadata on a membership change: the clusterctl command that makes it, one of
// Vias, recorded in the history beside who asked. A value not in Vias is not recorded.
const MDVia = "clusterd-via"

// The commands that mark their changes. Recorded in the history: never rename.
const (
	ViaMemberPrune   = "member prune"
	ViaMemberReplace = "member replace"
	// ViaMemberReplaceRemoveFirst marks the removal of a dead old member that member replace
	// makes before it adds the new one: a re-run that finds neither member goes on from it,
	// which a removal by a finished replacement (ViaMemberReplace) must not make it do.
	ViaMemberReplaceRemoveFirst = "member replace (remove first)"
)

// KnownVia reports whether v is a value of MDVia the history records: a fixed list, so that what
// a client says cannot put arbitrary text into every member's history and log.
func KnownVia(v string) bool {
	return v == ViaMemberPrune || v == ViaMemberReplace || v == ViaMemberReplaceRemoveFirst
}
