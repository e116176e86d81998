package printer

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// ContextStatus is one context of cluster status --all-contexts: the cluster's status, or why
// there is none.
type ContextStatus struct {
	Context   string
	Endpoints []string
	Status    *client.ClusterStatus
	Err       error
}

// memberStatusColumns are cluster status's member rows: member list's identity columns, then
// what each member's own status said.
var memberStatusColumns = append(pick(memberColumns, func(c column[client.Member]) column[client.MemberStatus] {
	return column[client.MemberStatus]{name: c.name, value: func(m client.MemberStatus) string { return c.value(m.Member) }}
}, "ID", "NAME", "STATUS"), []column[client.MemberStatus]{
	{name: "ROLE", value: func(m client.MemberStatus) string { return role(m.Member) }},
	{name: "REACHABLE", value: func(m client.MemberStatus) string { return strconv.FormatBool(m.Reachable()) }},
	{name: "IS LEADER", value: func(m client.MemberStatus) string { return strconv.FormatBool(m.IsLeader) }},
	onStatus("RAFT INDEX", memberStatus, func(s *client.Status) string { return uitoa(s.RaftIndex) }),
	{name: "BEHIND LEADER", value: func(m client.MemberStatus) string { return behindText(m.BehindKnown, m.Behind) }},
	onStatus("VERSION", memberStatus, func(s *client.Status) string { return s.Version }),
	{name: "ERRORS", value: func(m client.MemberStatus) string { return statusErrors(m.Err, m.Status) }},
}...)

func memberStatus(m client.MemberStatus) *client.Status { return m.Status }

// pick are the named columns of cols, in the order named, each made a column of U by as: a
// figure computed once, shown in several outputs.
func pick[T, U any](cols []column[T], as func(column[T]) column[U], names ...string) []column[U] {
	var out []column[U]
	for _, n := range names {
		if i := slices.IndexFunc(cols, func(c column[T]) bool { return c.name == n }); i >= 0 {
			out = append(out, as(cols[i]))
		}
	}
	return out
}

// clusterColumns are the cluster's own figures: the key: value lines above the members, and,
// from "leader" on, the columns of --all-contexts. The quorum figures are a dry run's rows.
var clusterColumns = append([]column[*client.ClusterStatus]{
	{name: "cluster", value: func(s *client.ClusterStatus) string { return client.FormatID(s.Header.ClusterID) }},
	{name: "leader", value: leaderName},
	{name: "term", value: func(s *client.ClusterStatus) string {
		if s.Leader == 0 {
			return ""
		}
		return uitoa(s.LeaderTerm)
	}},
}, append(each(quorumRows, quorumColumn), column[*client.ClusterStatus]{
	name: "healthy", value: func(s *client.ClusterStatus) string { return strconv.FormatBool(s.Healthy()) },
})...)

// quorumColumn is one of a dry run's quorum rows as a cluster's figure.
func quorumColumn(r quorumRow) column[*client.ClusterStatus] {
	name := r.label
	if name == "connected voters" {
		// Here they are the voters that answered this call, not those the leader hears.
		name = "live voters"
	}
	return column[*client.ClusterStatus]{name: name, value: func(s *client.ClusterStatus) string {
		q := s.Quorum()
		return strconv.Itoa(r.value(&q))
	}}
}

// leaderName is the leader's ID and, when it has one, its name in parentheses; "none" when no
// member said it leads.
func leaderName(s *client.ClusterStatus) string {
	if s.Leader == 0 {
		return "none"
	}
	for _, m := range s.Members {
		if m.ID == s.Leader && m.Name != "" {
			return client.FormatID(s.Leader) + " (" + m.Name + ")"
		}
	}
	return client.FormatID(s.Leader)
}

// contextColumns are --all-contexts' rows: the context, then the cluster's figures, empty for a
// cluster that did not answer, whose reason is the last column.
var contextColumns = append(append([]column[ContextStatus]{
	{name: "CONTEXT", value: func(c ContextStatus) string { return c.Context }},
	{name: "ENDPOINTS", value: func(c ContextStatus) string { return strings.Join(c.Endpoints, ",") }},
}, pick(clusterColumns, onContext, "leader", "voters", "learners", "fault tolerance", "healthy")...),
	column[ContextStatus]{name: "ERROR", value: func(c ContextStatus) string { return errText(c.Err) }},
)

// onContext is a cluster column as a column of a context, in capitals as a table's header; a
// context without a status is unhealthy and has no other figure.
func onContext(c column[*client.ClusterStatus]) column[ContextStatus] {
	return column[ContextStatus]{name: strings.ToUpper(c.name), value: func(cs ContextStatus) string {
		switch {
		case cs.Status != nil:
			return c.value(cs.Status)
		case c.name == "healthy":
			return "false"
		}
		return ""
	}}
}

// ClusterStatus prints one cluster: its figures as key: value lines, then a line (simple) or a
// row (table) a member; in json one object.
func (p Printer) ClusterStatus(w io.Writer, s *client.ClusterStatus) error {
	return p.print(w, p.Check(ClusterStatus), toClusterJSON(s), func(b *bytes.Buffer) {
		keyValues(b, clusterColumns, s)
		drawRows(b, p.format, memberStatusColumns, s.Members)
	})
}

// ContextStatuses prints --all-contexts: a line (simple) or a row (table) a context; in json
// an array of the clusters' objects, each with its context.
func (p Printer) ContextStatuses(w io.Writer, cs []ContextStatus) error {
	return printRows(p, w, ClusterStatus, each(cs, func(c ContextStatus) contextJSON {
		return contextJSON{Context: c.Context, Endpoints: c.Endpoints, clusterJSON: toClusterJSON(c.Status), Error: errText(c.Err)}
	}), contextColumns, cs)
}

// The JSON of cluster status (docs/output.md): never rename a field.

type memberStatusJSON struct {
	memberJSON
	Reachable    bool         `json:"reachable"`
	Version      string       `json:"version"`
	RaftIndex    *uint64      `json:"raftIndex"`
	BehindLeader *uint64      `json:"behindLeader"`
	Errors       list[string] `json:"errors"`
	Error        string       `json:"error"`
}

type clusterJSON struct {
	Header         headerJSON         `json:"header"`
	Members        []memberStatusJSON `json:"members"`
	Voters         int                `json:"voters"`
	Learners       int                `json:"learners"`
	StartedVoters  int                `json:"startedVoters"`
	LiveVoters     int                `json:"liveVoters"`
	Quorum         int                `json:"quorum"`
	FaultTolerance int                `json:"faultTolerance"`
	Leader         string             `json:"leader"`
	RaftTerm       uint64             `json:"raftTerm"`
	Healthy        bool               `json:"healthy"`
	// Split lists every group when the answers prove two apart or more; absent otherwise.
	Split []splitGroupJSON `json:"split,omitempty"`
}

// splitGroupJSON is one group of a split: never rename a field.
type splitGroupJSON struct {
	ClusterID  string   `json:"cluster_id"`
	Leader     string   `json:"leader"`
	RaftTerm   uint64   `json:"raftTerm"`
	Members    []string `json:"members"`
	Membership []string `json:"membership"`
}

type contextJSON struct {
	Context   string       `json:"context"`
	Endpoints list[string] `json:"endpoints"`
	Error     string       `json:"error"`
	clusterJSON
}

// toClusterJSON is s's object; a nil s (a context that did not answer) has no members and is
// unhealthy.
func toClusterJSON(s *client.ClusterStatus) clusterJSON {
	if s == nil {
		return clusterJSON{Members: []memberStatusJSON{}}
	}
	q := s.Quorum()
	j := clusterJSON{
		Header: toJSONHeader(s.Header), Voters: q.Voters, Learners: q.Learners, StartedVoters: q.StartedVoters,
		LiveVoters: q.ConnectedVoters, Quorum: q.Quorum, FaultTolerance: q.FaultTolerance, RaftTerm: s.LeaderTerm,
		Healthy: s.Healthy(),
		Members: each(s.Members, func(m client.MemberStatus) memberStatusJSON {
			mj := memberStatusJSON{memberJSON: toJSONMember(m.Member), Reachable: m.Reachable(), Error: errText(m.Err),
				BehindLeader: behind(m.BehindKnown, m.Behind)}
			if st := m.Status; st != nil {
				mj.Version, mj.RaftIndex, mj.Errors = st.Version, &st.RaftIndex, st.Errors
			}
			return mj
		}),
	}
	if s.Leader != 0 {
		j.Leader = client.FormatID(s.Leader)
	}
	if s.Split != nil {
		j.Split = each(s.Split.Groups, func(g client.Group) splitGroupJSON {
			return splitGroupJSON{ClusterID: client.FormatID(g.ClusterID), Leader: client.FormatID(g.Leader), RaftTerm: g.Term,
				Members: client.FormatIDs(g.Members), Membership: client.FormatIDs(g.Membership)}
		})
	}
	return j
}
