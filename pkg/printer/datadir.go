package printer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// DataDirs is what datadir status prints: each data directory, and the choice among them. The
// tags are its JSON (docs/output.md): never rename a field.
type DataDirs struct {
	Dirs list[DataDir] `json:"dataDirs"`
	// MostAdvanced is the data directory to restart from, empty when none can be; Reason says
	// why, and Steps are the recovery's commands.
	MostAdvanced string             `json:"mostAdvanced"`
	Reason       string             `json:"reason"`
	Steps        list[RecoveryStep] `json:"steps"`
}

// DataDir is one stopped member's data directory.
type DataDir struct {
	Path        string     `json:"dataDir"`
	Kind        string     `json:"kind"` // clusterd or etcd
	MemberID    ID         `json:"memberID"`
	Name        string     `json:"name"`
	ClusterID   ID         `json:"clusterID"`
	Term        uint64     `json:"term"`
	LastIndex   uint64     `json:"lastIndex"`
	CommitIndex uint64     `json:"commitIndex"`
	Applied     uint64     `json:"appliedIndex"`
	Members     memberList `json:"members"`
	Removed     int        `json:"removed"`
	Tombstone   bool       `json:"tombstone"`
}

// RecoveryStep is one step of the recovery: what it does, then its commands.
type RecoveryStep struct {
	Say      string       `json:"say"`
	Commands list[string] `json:"commands"`
}

// DataDirChecks is what datadir check prints: one result a path, in the order given.
type DataDirChecks []PathCheck

// PathCheck is the check of one data directory or snapshot file.
type PathCheck struct {
	Path     string
	Kind     string
	Compared []string
	Problems []CheckProblem
}

// CheckProblem is one disagreement about one member.
type CheckProblem struct {
	MemberID uint64 // 0 for one about no member in particular
	Text     string
}

// dataDirColumns are datadir status's key: value lines and table columns, in order.
var dataDirColumns = []column[DataDir]{
	{name: "data dir", value: func(d DataDir) string { return d.Path }},
	{name: "kind", value: func(d DataDir) string { return d.Kind }},
	{name: "member ID", value: func(d DataDir) string { return d.MemberID.String() }},
	{name: "name", value: func(d DataDir) string { return d.Name }},
	{name: "cluster ID", value: func(d DataDir) string { return d.ClusterID.String() }},
	{name: "term", value: func(d DataDir) string { return uitoa(d.Term) }},
	{name: "last index", value: func(d DataDir) string { return uitoa(d.LastIndex) }},
	{name: "commit index", value: func(d DataDir) string { return uitoa(d.CommitIndex) }},
	{name: "applied index", value: func(d DataDir) string { return uitoa(d.Applied) }},
	{name: "voters", value: func(d DataDir) string { return strconv.Itoa(countRole(d.Members, false)) }},
	{name: "learners", value: func(d DataDir) string { return strconv.Itoa(countRole(d.Members, true)) }},
	{name: "removed", value: func(d DataDir) string { return strconv.Itoa(d.Removed) }},
	{name: "tombstone", value: func(d DataDir) string { return strconv.FormatBool(d.Tombstone) }},
}

func countRole(ms []client.Member, learners bool) int {
	n := 0
	for _, m := range ms {
		if m.IsLearner == learners {
			n++
		}
	}
	return n
}

// DataDirStatus prints the result of datadir status.
func (p Printer) DataDirStatus(w io.Writer, r *DataDirs) error {
	return p.print(w, p.Check(DataDirStatus), r, func(b *bytes.Buffer) {
		if p.format == Table {
			table(b, dataDirColumns, r.Dirs)
		} else {
			for i, d := range r.Dirs {
				if i > 0 {
					b.WriteByte('\n')
				}
				keyValues(b, dataDirColumns, d)
				// The member lines are member list's, so the same parsing reads both.
				for _, m := range d.Members {
					simpleLine(b, fileMemberColumns, m)
				}
			}
		}
		recovery(b, r)
	})
}

// recovery is the end of the simple and table output: the choice, why, and the steps.
func recovery(b *bytes.Buffer, r *DataDirs) {
	b.WriteByte('\n')
	if r.MostAdvanced == "" {
		fmt.Fprintf(b, "Restart from: none\nReason: %s\n", r.Reason)
		return
	}
	fmt.Fprintf(b, "Restart from: %s\nReason: %s\n\nRecovery steps:\n", r.MostAdvanced, r.Reason)
	for i, s := range r.Steps {
		fmt.Fprintf(b, "# %d. %s\n", i+1, s.Say)
		for _, c := range s.Commands {
			b.WriteString(c + "\n")
		}
	}
}

// DataDirCheck prints the result of datadir check: in simple, one line a disagreement, each
// starting with the path, or one line saying the path is sound.
func (p Printer) DataDirCheck(w io.Writer, r DataDirChecks) error {
	return p.print(w, p.Check(DataDirCheck), toChecksJSON(r), func(b *bytes.Buffer) {
		for _, c := range r {
			if len(c.Problems) == 0 {
				fmt.Fprintf(b, "%s: sound (%s)\n", c.Path, c.Kind)
			}
			for _, pr := range c.Problems {
				if pr.MemberID != 0 {
					fmt.Fprintf(b, "%s: member %s: %s\n", c.Path, client.FormatID(pr.MemberID), pr.Text)
				} else {
					fmt.Fprintf(b, "%s: %s\n", c.Path, pr.Text)
				}
			}
		}
	})
}

// The JSON of datadir check (docs/output.md). Never rename a field.

type problemJSON struct {
	MemberID string `json:"memberID"`
	Text     string `json:"text"`
}

type checkJSON struct {
	Path     string        `json:"path"`
	Kind     string        `json:"kind"`
	Sound    bool          `json:"sound"`
	Compared list[string]  `json:"compared"`
	Problems []problemJSON `json:"problems"`
}

func toChecksJSON(r DataDirChecks) any {
	return struct {
		Checks []checkJSON `json:"checks"`
	}{each(r, func(c PathCheck) checkJSON {
		return checkJSON{Path: c.Path, Kind: c.Kind, Sound: len(c.Problems) == 0, Compared: c.Compared,
			Problems: each(c.Problems, func(p CheckProblem) problemJSON {
				id := ""
				if p.MemberID != 0 {
					id = client.FormatID(p.MemberID)
				}
				return problemJSON{MemberID: id, Text: p.Text}
			})}
	})}
}

// TermReset is what datadir reset-term did to one directory.
type TermReset struct {
	Path     string
	MemberID uint64
	// From and To are the term before and after; LogTerm the log's highest, To's base.
	From, To, LogTerm uint64
	Backup            string // the copy of the file rewritten
}

// DataDirResetTerm prints one line a directory whose term was reset.
func (p Printer) DataDirResetTerm(w io.Writer, r TermReset) error {
	if err := p.Check(DataDirResetTerm); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s: member %016x: term %d reset to %d (the log's highest term, %d, plus 2^31); the file rewritten was copied to %s\n",
		r.Path, r.MemberID, r.From, r.To, r.LogTerm, r.Backup)
	return err
}
