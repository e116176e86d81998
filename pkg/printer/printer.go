package printer

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// Format is the name of an output format, as given to -w/--write-out.
type Format string

// The output formats. Simple is the default.
const (
	Simple Format = "simple"
	Table  Format = "table"
	JSON   Format = "json"
	Env    Format = "env"
)

// formats lists every format in the order help texts and errors name them.
var formats = []Format{Simple, Table, JSON, Env}

// Kind is what a command prints. Its values are compared, never ordered: what a kind can be
// printed in is its row in kinds.
type Kind int

// The kinds of result, one per command.
const (
	MemberAdd Kind = iota
	MemberRemove
	MemberUpdate
	MemberPromote
	MemberList
	SnapshotSave
	SnapshotStatus
	SnapshotRestore
	DiscoveryNew
	DiscoveryStatus
	EndpointStatus
	EndpointHealth
	MoveLeader
	Version
	MemberReplace
	ClusterStatus
	ConfigContexts
	ConfigText
	DataDirStatus
	DataDirCheck
	MemberPrune
	MemberHistory
	DataDirResetTerm
)

// kinds is, for every kind, its name and the formats that print it and its --dry-run (none for
// a command without one), in the order help and errors name them. Check, CheckFor and
// FormatsNamed read this table only, so a new kind prints nothing until it has its row;
// TestKindsHavePrinters checks that every format a row lists is printed.
var kinds = map[Kind]struct {
	name    string
	formats []Format
	dryRun  []Format
}{
	MemberAdd:       {"member add", []Format{Simple, JSON, Env}, []Format{Simple, JSON}},
	MemberRemove:    {"member remove", []Format{Simple, JSON}, []Format{Simple, JSON}},
	MemberUpdate:    {"member update", []Format{Simple, JSON}, []Format{Simple, JSON}},
	MemberPromote:   {"member promote", []Format{Simple, JSON}, []Format{Simple, JSON}},
	MemberList:      {"member list", []Format{Simple, Table, JSON}, nil},
	SnapshotSave:    {"snapshot save", []Format{Simple, JSON}, nil},
	SnapshotStatus:  {"snapshot status", []Format{Simple, Table, JSON}, nil},
	SnapshotRestore: {"snapshot restore", []Format{Simple, JSON}, nil},
	DiscoveryNew:    {"discovery new", []Format{Simple, JSON, Env}, nil},
	DiscoveryStatus: {"discovery status", []Format{Simple, Table, JSON}, nil},
	EndpointStatus:  {"endpoint status", []Format{Simple, Table, JSON}, nil},
	EndpointHealth:  {"endpoint health", []Format{Simple, Table, JSON}, nil},
	MoveLeader:      {"move-leader", []Format{Simple, JSON}, nil},
	Version:         {"version", []Format{Simple, JSON}, nil},
	// member replace prints member add's output for its add, and in simple the success line of
	// each later step; in json one line after the add and one at the end (replace.go); its
	// --dry-run is a plan of several steps (ReplacePlan).
	MemberReplace: {"member replace", []Format{Simple, JSON, Env}, []Format{Simple, JSON}},
	// cluster status prints one cluster, or with --all-contexts one row a context (cluster.go).
	ClusterStatus: {"cluster status", []Format{Simple, Table, JSON}, nil},
	// config get-contexts lists the contexts; the other config verbs print a line of text, or
	// config view the file (contexts.go).
	ConfigContexts: {"config get-contexts", []Format{Simple, Table, JSON}, nil},
	ConfigText:     {"config", []Format{Simple}, nil},
	DataDirStatus:  {"datadir status", []Format{Simple, Table, JSON}, nil},
	DataDirCheck:   {"datadir check", []Format{Simple, JSON}, nil},
	// member prune prints a line a member removed (prune.go).
	MemberPrune:   {"member prune", []Format{Simple, JSON}, []Format{Simple, JSON}},
	MemberHistory: {"member history", []Format{Simple, Table, JSON}, nil},
	// datadir reset-term prints one line a directory.
	DataDirResetTerm: {"datadir reset-term", []Format{Simple}, nil},
}

// FormatsNamed are the formats the command named name (its path below the root, such as
// "member list") prints, by its kind's row, for completion; every format for a command that
// prints no kind of its own.
func FormatsNamed(name string) []string {
	for _, row := range kinds {
		if row.name == name {
			return names(row.formats)
		}
	}
	return names(formats)
}

func (k Kind) String() string {
	if row, ok := kinds[k]; ok {
		return row.name
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// changeVerbs are the words between the ID and the cluster ID in the simple success lines.
var changeVerbs = map[Kind]string{
	MemberRemove:  "removed from",
	MemberUpdate:  "updated in",
	MemberPromote: "promoted in",
}

// Printer prints results in one format. Every method checks the format against the kind's row
// in kinds first, so a format is only ever asked to print what the row lists.
type Printer struct {
	format Format
}

// New returns the printer for format f, or an error naming the formats there are.
func New(f Format) (Printer, error) {
	if !slices.Contains(formats, f) {
		return Printer{}, fmt.Errorf("unknown output format %q (supported: %s)", f, join(formats))
	}
	return Printer{format: f}, nil
}

// Check refuses a kind of result this format cannot print; a command calls it before sending.
func (p Printer) Check(k Kind) error {
	if !slices.Contains(kinds[k].formats, p.format) {
		return fmt.Errorf("output format %q is not supported by %s (supported: %s)", p.format, k, join(kinds[k].formats))
	}
	return nil
}

// CheckFor is Check, or for a dry run the check against the formats of kind k's --dry-run; a
// command calls it before sending.
func (p Printer) CheckFor(k Kind, dryRun bool) error {
	switch {
	case !dryRun:
		return p.Check(k)
	case kinds[k].dryRun == nil:
		return fmt.Errorf("%s has no --dry-run", k)
	case !slices.Contains(kinds[k].dryRun, p.format):
		return fmt.Errorf("output format %q is not supported by %s --dry-run (supported: %s)", p.format, k, join(kinds[k].dryRun))
	}
	return nil
}

// MemberAdd prints the result of member add.
func (p Printer) MemberAdd(w io.Writer, r *client.AddResult) error {
	env := newEnvironment(r)
	return p.print(w, p.Check(MemberAdd), addJSON{toJSONChange(&r.ChangeResult), toJSONMember(r.Member), env}, func(b *bytes.Buffer) {
		if p.format == Simple {
			b.WriteString(addedLine(r) + "\n\n")
		}
		b.WriteString(env.String())
	})
}

// MemberAddNote writes on w (stderr) what member add's output lacks in env format, whose stdout
// is the environment alone: simple's first line, with the new member's ID, which is how etcd
// names the member until it starts. Other formats print the ID on stdout: nothing is written.
func (p Printer) MemberAddNote(w io.Writer, r *client.AddResult) error {
	if p.format != Env {
		return nil
	}
	_, err := fmt.Fprintln(w, addedLine(r))
	return err
}

// MemberChange prints the result of member remove, update or promote, as k says.
func (p Printer) MemberChange(w io.Writer, k Kind, r *client.ChangeResult) error {
	return p.print(w, p.Check(k), toJSONChange(r), func(b *bytes.Buffer) { b.WriteString(changedLine(k, r)) })
}

// DryRun prints the verdict of member add, remove, update or promote with --dry-run, as k says.
func (p Printer) DryRun(w io.Writer, k Kind, r *client.DryRun) error {
	return p.print(w, p.CheckFor(k, true), toDryRunJSON(k, r), func(b *bytes.Buffer) { simpleDryRun(b, k, r) })
}

// MemberList prints the result of member list.
func (p Printer) MemberList(w io.Writer, r *client.ListResult) error {
	return printRows(p, w, MemberList, listJSON{toJSONHeader(r.Header), r.Members}, memberColumns, r.Members)
}

func names(fs []Format) []string { return each(fs, func(f Format) string { return string(f) }) }

func join(fs []Format) string { return strings.Join(names(fs), ", ") }
