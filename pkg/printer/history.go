package printer

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// historyColumns are one change of the membership history: simple has the first six, the
// issue's "time, raft index, change, member ID and name, who"; the table adds the rest.
var historyColumns = []column[membership.Event]{
	{name: "TIME", value: func(e membership.Event) string { return orDash(eventTime(e, time.RFC3339)) }},
	{name: "RAFT INDEX", value: func(e membership.Event) string { return uitoa(e.RaftIndex) }},
	{name: "CHANGE", value: func(e membership.Event) string { return e.Change }},
	{name: "ID", value: func(e membership.Event) string { return e.MemberID.String() }},
	{name: "NAME", value: func(e membership.Event) string { return e.Name }},
	{name: "BY", value: func(e membership.Event) string { return orDash(e.By.String()) }},
	{name: "TERM", value: func(e membership.Event) string { return uitoa(e.Term) }, tableOnly: true},
	{name: "PEER ADDRS", value: func(e membership.Event) string { return strings.Join(e.PeerURLs, ",") }, tableOnly: true},
	{name: "IS LEARNER", value: func(e membership.Event) string { return strconv.FormatBool(e.IsLearner) }, tableOnly: true},
}

// eventTime is when the leader proposed the change, in UTC in layout; "" when the entry predates
// the history and carries no time.
func eventTime(e membership.Event, layout string) string {
	if e.Time.IsZero() {
		return ""
	}
	return e.Time.UTC().Format(layout)
}

// The JSON of member history (docs/output.md): never rename a field.

type historyEventJSON struct {
	RaftIndex uint64       `json:"raftIndex"`
	Term      uint64       `json:"term"`
	Time      string       `json:"time"`
	Change    string       `json:"change"`
	MemberID  string       `json:"memberID"`
	Name      string       `json:"name"`
	PeerURLs  list[string] `json:"peerURLs"`
	IsLearner bool         `json:"isLearner"`
	By        string       `json:"by"`
}

type historyJSON struct {
	Header  headerJSON         `json:"header"`
	History []historyEventJSON `json:"history"`
	Dropped uint64             `json:"dropped"`
}

// MemberHistory prints the membership history, oldest first: one line a change in simple.
func (p Printer) MemberHistory(w io.Writer, r *client.HistoryResult) error {
	j := historyJSON{toJSONHeader(r.Header), each(r.Events, toEventJSON), r.Dropped}
	return printRows(p, w, MemberHistory, j, historyColumns, r.Events)
}

func toEventJSON(e membership.Event) historyEventJSON {
	return historyEventJSON{RaftIndex: e.RaftIndex, Term: e.Term, Time: eventTime(e, time.RFC3339Nano), Change: e.Change,
		MemberID: e.MemberID.String(), Name: e.Name, PeerURLs: e.PeerURLs, IsLearner: e.IsLearner, By: e.By.String()}
}
