package wire

import (
	"time"

	pb "github.com/clusterctl/clusterctl/pkg/wire/clusterdpb"
)

// HistoryList is the membership history call's full method name, which clients invoke and
// authorization sees (docs/commands/member-history.md).
const HistoryList = pb.History_List_FullMethodName

// HistoryRequest asks for the events of the membership history, oldest first
// (clusterdpb.HistoryRequest).
type HistoryRequest struct {
	// Linearizable reads the history through the leader; otherwise the member answers from what
	// it has applied.
	Linearizable bool
	// Member keeps the events of one member: its ID in hex or its name (a removed member's too).
	Member string
	// Since keeps the events proposed at or after it; events without a time (written by an
	// older version) are left out then.
	Since time.Time
	// Limit keeps the newest Limit events of those selected; zero keeps them all.
	Limit int
}

// Proto is q on the wire.
func (q HistoryRequest) Proto() *pb.HistoryRequest {
	return &pb.HistoryRequest{Linearizable: q.Linearizable, Member: q.Member, Limit: int64(q.Limit), Since: TimeToProto(q.Since)}
}

// HistoryRequestFromProto reads what HistoryRequest.Proto wrote; a negative limit keeps every
// event, as zero does.
func HistoryRequestFromProto(p *pb.HistoryRequest) HistoryRequest {
	return HistoryRequest{
		Linearizable: p.GetLinearizable(), Member: p.GetMember(), Since: TimeFromProto(p.GetSince()),
		Limit: int(max(0, min(p.GetLimit(), int64(^uint32(0)>>1)))),
	}
}

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
