package printer

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/olekukonko/tablewriter"
)

// column is one field of a result, T, in the simple and the table output: one model feeds both,
// so the two cannot list different fields.
type column[T any] struct {
	// name is the field's name: a table's header prints it in capitals, as etcdctl's do, and a
	// key: value line prints it as it is.
	name  string
	value func(T) string
	// tableOnly marks a field the simple line does not have: its six fields are etcdctl's and a
	// contract that scripts split on.
	tableOnly bool
	// live marks a field only a running cluster knows: a snapshot file has no leader.
	live bool
}

var memberColumns = []column[client.Member]{
	{name: "ID", value: func(m client.Member) string { return client.FormatID(m.ID) }},
	{name: "STATUS", value: status},
	{name: "NAME", value: func(m client.Member) string { return m.Name }},
	{name: "PEER ADDRS", value: func(m client.Member) string { return strings.Join(m.PeerURLs, ",") }},
	{name: "CLIENT ADDRS", value: func(m client.Member) string { return strings.Join(m.ClientURLs, ",") }},
	{name: "IS LEARNER", value: func(m client.Member) string { return strconv.FormatBool(m.IsLearner) }},
	{name: "IS LEADER", value: func(m client.Member) string { return strconv.FormatBool(m.IsLeader) }, tableOnly: true, live: true},
}

// fileMemberColumns are the member columns a snapshot file has.
var fileMemberColumns = slices.DeleteFunc(slices.Clone(memberColumns), func(c column[client.Member]) bool { return c.live })

func status(m client.Member) string {
	if m.Started {
		return "started"
	}
	return "unstarted"
}

// simpleLine is one item's simple line: its fields joined by ", ".
func simpleLine[T any](b *bytes.Buffer, cols []column[T], item T) {
	sep := ""
	for _, c := range cols {
		if !c.tableOnly {
			b.WriteString(sep + c.value(item))
			sep = ", "
		}
	}
	b.WriteByte('\n')
}

// keyValues is one item's simple output as name: value lines, one a field.
func keyValues[T any](b *bytes.Buffer, cols []column[T], item T) {
	for _, c := range cols {
		fmt.Fprintf(b, "%s: %s\n", c.name, c.value(item))
	}
}

// table draws items as one table of cols into b. Every table clusterctl prints is drawn here.
//
// tablewriter v0.0.5, as etcdctl uses, rather than v1: v1 and its dependencies build tables at
// package initialisation, which every clusterctl command paid for at start-up whether it drew a
// table or not. The table goes to a buffer because v0.0.5's Render drops write errors: the caller
// writes the buffer once, which also gives stdout one system call.
func table[T any](b *bytes.Buffer, cols []column[T], items []T) {
	t := tablewriter.NewWriter(b)
	t.SetAutoFormatHeaders(false)
	// Addresses have no spaces to wrap at; turning wrapping off keeps a long cell on one line
	// whatever the library's idea of a wide column is.
	t.SetAutoWrapText(false)
	t.SetHeaderAlignment(tablewriter.ALIGN_CENTER)
	// etcdctl aligns cells right; the same look keeps eyes used to it at home.
	t.SetAlignment(tablewriter.ALIGN_RIGHT)
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = strings.ToUpper(c.name)
	}
	t.SetHeader(header)
	for _, item := range items {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = c.value(item)
		}
		t.Append(row)
	}
	t.Render()
}

// drawRows draws items in format f: a table, or a simple line each.
func drawRows[T any](b *bytes.Buffer, f Format, cols []column[T], items []T) {
	if f == Table {
		table(b, cols, items)
		return
	}
	for _, item := range items {
		simpleLine(b, cols, item)
	}
}

// printRows prints items as kind k: in json v, otherwise a line (simple) or a row (table) an
// item.
func printRows[T any](p Printer, w io.Writer, k Kind, v any, cols []column[T], items []T) error {
	return p.print(w, p.Check(k), v, func(b *bytes.Buffer) { drawRows(b, p.format, cols, items) })
}

// print prints a result unless check, the format's check for its kind, refused it: in json v,
// otherwise what text writes, built in a buffer and written in one Write.
func (p Printer) print(w io.Writer, check error, v any, text func(b *bytes.Buffer)) error {
	if check != nil {
		return check
	}
	if p.format == JSON {
		return writeJSON(w, v)
	}
	var b bytes.Buffer
	text(&b)
	_, err := w.Write(b.Bytes())
	return err
}

// addedLine is the first line of member add's simple output.
func addedLine(r *client.AddResult) string {
	as := ""
	if r.Member.IsLearner {
		as = " as learner"
	}
	return fmt.Sprintf("Member %s added%s to cluster %s", client.FormatID(r.ID), as, client.FormatID(r.Header.ClusterID))
}

// changedLine is the simple output of member remove, update or promote, as k says.
func changedLine(k Kind, r *client.ChangeResult) string {
	return fmt.Sprintf("Member %s %s cluster %s\n", client.FormatID(r.ID), changeVerbs[k], client.FormatID(r.Header.ClusterID))
}
