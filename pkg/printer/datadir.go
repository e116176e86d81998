package printer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// DataDirs is what datadir status prints: each data directory, and the choice among them.
type DataDirs struct {
	Dirs []DataDir
	// MostAdvanced is the data directory to restart from, empty when none can be; Reason says
	// why, and Steps are the recovery's commands.
	MostAdvanced string
	Reason       string
	Steps        []RecoveryStep
}

// DataDir is one stopped member's data directory.
type DataDir struct {
	Path        string
	Kind        string // clusterd or etcd
	MemberID    uint64
	Name        string
	ClusterID   uint64
	Term        uint64
	LastIndex   uint64
	CommitIndex uint64
	Applied     uint64
	Members     []client.Member
	Removed     int
	Tombstone   bool
}

// RecoveryStep is one step of the recovery: what it does, then its commands.
type RecoveryStep struct {
	Say      string
	Commands []string
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
	{name: "member ID", value: func(d DataDir) string { return client.FormatID(d.MemberID) }},
	{name: "name", value: func(d DataDir) string { return d.Name }},
	{name: "cluster ID", value: func(d DataDir) string { return client.FormatID(d.ClusterID) }},
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
	if err := p.Check(DataDirStatus); err != nil {
		return err
	}
	if p.format == JSON {
		return writeJSON(w, toDataDirsJSON(r))
	}
	var b bytes.Buffer
	if p.format == Table {
		table(&b, dataDirColumns, r.Dirs)
	} else {
		for i, d := range r.Dirs {
			if i > 0 {
				b.WriteByte('\n')
			}
			keyValues(&b, dataDirColumns, d)
			// The member lines are member list's, so the same parsing reads both.
			for _, m := range d.Members {
				simpleLine(&b, fileMemberColumns, m)
			}
		}
	}
	recovery(&b, r)
	return flush(w, &b)
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
	if err := p.Check(DataDirCheck); err != nil {
		return err
	}
	if p.format == JSON {
		return writeJSON(w, toChecksJSON(r))
	}
	var b bytes.Buffer
	for _, c := range r {
		if len(c.Problems) == 0 {
			fmt.Fprintf(&b, "%s: sound (%s)\n", c.Path, c.Kind)
			continue
		}
		for _, pr := range c.Problems {
			if pr.MemberID != 0 {
				fmt.Fprintf(&b, "%s: member %s: %s\n", c.Path, client.FormatID(pr.MemberID), pr.Text)
			} else {
				fmt.Fprintf(&b, "%s: %s\n", c.Path, pr.Text)
			}
		}
	}
	return flush(w, &b)
}

// The JSON of the datadir commands (docs/output.md). Never rename a field.

type dataDirJSON struct {
	DataDir      string       `json:"dataDir"`
	Kind         string       `json:"kind"`
	MemberID     string       `json:"memberID"`
	Name         string       `json:"name"`
	ClusterID    string       `json:"clusterID"`
	Term         uint64       `json:"term"`
	LastIndex    uint64       `json:"lastIndex"`
	CommitIndex  uint64       `json:"commitIndex"`
	AppliedIndex uint64       `json:"appliedIndex"`
	Members      []memberJSON `json:"members"`
	Removed      int          `json:"removed"`
	Tombstone    bool         `json:"tombstone"`
}

type stepJSON struct {
	Say      string   `json:"say"`
	Commands []string `json:"commands"`
}

type dataDirsJSON struct {
	DataDirs     []dataDirJSON `json:"dataDirs"`
	MostAdvanced string        `json:"mostAdvanced"`
	Reason       string        `json:"reason"`
	Steps        []stepJSON    `json:"steps"`
}

func toDataDirsJSON(r *DataDirs) dataDirsJSON {
	out := dataDirsJSON{DataDirs: []dataDirJSON{}, MostAdvanced: r.MostAdvanced, Reason: r.Reason, Steps: []stepJSON{}}
	for _, d := range r.Dirs {
		out.DataDirs = append(out.DataDirs, dataDirJSON{DataDir: d.Path, Kind: d.Kind, MemberID: client.FormatID(d.MemberID),
			Name: d.Name, ClusterID: client.FormatID(d.ClusterID), Term: d.Term, LastIndex: d.LastIndex,
			CommitIndex: d.CommitIndex, AppliedIndex: d.Applied, Members: toJSONMembers(d.Members),
			Removed: d.Removed, Tombstone: d.Tombstone})
	}
	for _, s := range r.Steps {
		out.Steps = append(out.Steps, stepJSON{Say: s.Say, Commands: nonNil(s.Commands)})
	}
	return out
}

type problemJSON struct {
	MemberID string `json:"memberID"`
	Text     string `json:"text"`
}

type checkJSON struct {
	Path     string        `json:"path"`
	Kind     string        `json:"kind"`
	Sound    bool          `json:"sound"`
	Compared []string      `json:"compared"`
	Problems []problemJSON `json:"problems"`
}

func toChecksJSON(r DataDirChecks) any {
	out := struct {
		Checks []checkJSON `json:"checks"`
	}{Checks: []checkJSON{}}
	for _, c := range r {
		j := checkJSON{Path: c.Path, Kind: c.Kind, Sound: len(c.Problems) == 0, Compared: nonNil(c.Compared), Problems: []problemJSON{}}
		for _, p := range c.Problems {
			id := ""
			if p.MemberID != 0 {
				id = client.FormatID(p.MemberID)
			}
			j.Problems = append(j.Problems, problemJSON{MemberID: id, Text: p.Text})
		}
		out.Checks = append(out.Checks, j)
	}
	return out
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
