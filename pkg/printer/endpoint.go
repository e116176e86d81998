package printer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// StatusRow is one endpoint of endpoint status: its answer or its error, the member's name, and
// how far its raft index trails the leader's in the same round of calls.
type StatusRow struct {
	client.EndpointStatus
	Name string
	// Behind is the leader's raft index less this member's; BehindKnown is false when the
	// member did not answer or the leader was not among those that did.
	Behind      uint64
	BehindKnown bool
}

func rowStatus(r StatusRow) *client.Status { return r.Status }

// statusColumns are etcdctl's endpoint status columns it has a value for, with the name and the
// lag after the ID and the errors last, where a failed call's reason goes.
var statusColumns = []column[StatusRow]{
	{name: "ENDPOINT", value: func(r StatusRow) string { return r.Endpoint }},
	onStatus("ID", rowStatus, func(s *client.Status) string { return client.FormatID(s.Header.MemberID) }),
	{name: "NAME", value: func(r StatusRow) string { return r.Name }},
	onStatus("VERSION", rowStatus, func(s *client.Status) string { return s.Version }),
	onStatus("DB SIZE", rowStatus, func(s *client.Status) string { return humanBytes(s.DBSize) }),
	onStatus("IS LEADER", rowStatus, func(s *client.Status) string { return strconv.FormatBool(s.IsLeader()) }),
	onStatus("IS LEARNER", rowStatus, func(s *client.Status) string { return strconv.FormatBool(s.IsLearner) }),
	onStatus("RAFT TERM", rowStatus, func(s *client.Status) string { return uitoa(s.RaftTerm) }),
	onStatus("RAFT INDEX", rowStatus, func(s *client.Status) string { return uitoa(s.RaftIndex) }),
	onStatus("RAFT APPLIED INDEX", rowStatus, func(s *client.Status) string { return uitoa(s.RaftAppliedIndex) }),
	{name: "BEHIND LEADER", value: func(r StatusRow) string { return behindText(r.BehindKnown, r.Behind) }},
	{name: "ERRORS", value: func(r StatusRow) string { return statusErrors(r.Err, r.Status) }},
}

// onStatus is a column of the status answer status finds in an item: empty where there is none.
func onStatus[T any](name string, status func(T) *client.Status, value func(*client.Status) string) column[T] {
	return column[T]{name: name, value: func(item T) string {
		if s := status(item); s != nil {
			return value(s)
		}
		return ""
	}}
}

// behindText is a distance to the leader in a row: empty when unknown.
func behindText(known bool, v uint64) string {
	if !known {
		return ""
	}
	return uitoa(v)
}

// statusErrors is why a member did not answer, else the errors its answer lists.
func statusErrors(err error, s *client.Status) string {
	switch {
	case err != nil:
		return oneLine(err.Error())
	case s != nil:
		return strings.Join(s.Errors, ", ")
	}
	return ""
}

func uitoa(v uint64) string { return strconv.FormatUint(v, 10) }

// oneLine keeps a reason on its row.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// behind is a distance to the leader in JSON: null when unknown.
func behind(known bool, v uint64) *uint64 {
	if !known {
		return nil
	}
	return &v
}

// errText is err on one line, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(err.Error())
}

// EndpointStatus prints one row an endpoint, in the order given.
func (p Printer) EndpointStatus(w io.Writer, rows []StatusRow) error {
	return printRows(p, w, EndpointStatus, each(rows, toStatusJSON), statusColumns, rows)
}

// healthColumns are etcdctl's endpoint health table columns.
var healthColumns = []column[client.EndpointHealth]{
	{name: "ENDPOINT", value: func(h client.EndpointHealth) string { return h.Endpoint }},
	{name: "HEALTH", value: func(h client.EndpointHealth) string { return strconv.FormatBool(h.Healthy()) }},
	{name: "TOOK", value: func(h client.EndpointHealth) string { return took(h.Took) }},
	{name: "ERROR", value: func(h client.EndpointHealth) string { return errText(h.Err) }},
}

func took(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }

// EndpointHealth prints one line an endpoint: in simple, etcdctl's sentences, all on stdout.
func (p Printer) EndpointHealth(w io.Writer, hs []client.EndpointHealth) error {
	return p.print(w, p.Check(EndpointHealth), each(hs, func(h client.EndpointHealth) healthJSON {
		return healthJSON{Endpoint: h.Endpoint, Health: h.Healthy(), Took: took(h.Took), Error: errText(h.Err)}
	}), func(b *bytes.Buffer) {
		if p.format == Table {
			table(b, healthColumns, hs)
			return
		}
		for _, h := range hs {
			if h.Healthy() {
				fmt.Fprintf(b, "%s is healthy: took = %s\n", h.Endpoint, took(h.Took))
			} else {
				fmt.Fprintf(b, "%s is unhealthy: %s\n", h.Endpoint, errText(h.Err))
			}
		}
	})
}

// LeaderMove is what move-leader did.
type LeaderMove struct {
	Header   client.Header
	From, To uint64
}

// MoveLeader prints etcdctl's line, or the move as JSON.
func (p Printer) MoveLeader(w io.Writer, m *LeaderMove) error {
	from, to := client.FormatID(m.From), client.FormatID(m.To)
	return p.print(w, p.Check(MoveLeader), moveJSON{toJSONHeader(m.Header), from, to}, func(b *bytes.Buffer) {
		fmt.Fprintf(b, "Leadership transferred from %s to %s\n", from, to)
	})
}

// Versions is what version prints: the program's, the Go release it was built with, and the
// server's when one answered (ServerErr says why not otherwise).
type Versions struct {
	Program, Name, Go string
	Server            string
	ServerErr         error
}

// Version prints the versions, one "what: version" line each in simple.
func (p Printer) Version(w io.Writer, v *Versions) error {
	serverErr := errText(v.ServerErr)
	return p.print(w, p.Check(Version), versionJSON{v.Program, v.Go, v.Server, serverErr}, func(b *bytes.Buffer) {
		server := v.Server
		if server == "" {
			server = "unknown (" + serverErr + ")"
		}
		fmt.Fprintf(b, "%s version: %s\nGo version: %s\nserver version: %s\n", v.Name, v.Program, v.Go, server)
	})
}

// The JSON of the maintenance commands (docs/output.md). etcdctl's names where etcdctl has the
// field; IDs as 16-hex-digit strings; clusterctl's own fields in lower camel case. Never rename
// a field.

type statusRowJSON struct {
	Endpoint string      `json:"Endpoint"`
	Status   *statusJSON `json:"Status"`
	// name, behindLeader and error are clusterctl's own: BehindLeader is null when
	// unknown, Error "" when the endpoint answered.
	Name         string  `json:"name"`
	BehindLeader *uint64 `json:"behindLeader"`
	Error        string  `json:"error"`
}

type statusJSON struct {
	Header           headerJSON   `json:"header"`
	Version          string       `json:"version"`
	DBSize           int64        `json:"dbSize"`
	Leader           string       `json:"leader"`
	RaftIndex        uint64       `json:"raftIndex"`
	RaftTerm         uint64       `json:"raftTerm"`
	RaftAppliedIndex uint64       `json:"raftAppliedIndex"`
	Errors           list[string] `json:"errors"`
	DBSizeInUse      int64        `json:"dbSizeInUse"`
	IsLearner        bool         `json:"isLearner"`
}

func toStatusJSON(r StatusRow) statusRowJSON {
	j := statusRowJSON{Endpoint: r.Endpoint, Name: r.Name, BehindLeader: behind(r.BehindKnown, r.Behind), Error: errText(r.Err)}
	if s := r.Status; s != nil {
		j.Status = &statusJSON{
			Header: toJSONHeader(s.Header), Version: s.Version, DBSize: s.DBSize, Leader: client.FormatID(s.Leader),
			RaftIndex: s.RaftIndex, RaftTerm: s.RaftTerm, RaftAppliedIndex: s.RaftAppliedIndex,
			Errors: s.Errors, DBSizeInUse: s.DBSizeInUse, IsLearner: s.IsLearner,
		}
	}
	return j
}

type healthJSON struct {
	Endpoint string `json:"endpoint"`
	Health   bool   `json:"health"`
	Took     string `json:"took"`
	Error    string `json:"error"`
}

type moveJSON struct {
	Header headerJSON `json:"header"`
	From   string     `json:"from"`
	To     string     `json:"to"`
}

type versionJSON struct {
	Version     string `json:"version"`
	Go          string `json:"goVersion"`
	Server      string `json:"serverVersion"`
	ServerError string `json:"serverError"`
}
