package printer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/olekukonko/tablewriter"
)

// column is one field of a member in member list's simple and table output.
type column struct {
	header string
	value  func(client.Member) string
	// tableOnly marks a field the simple line does not have: its six fields are etcdctl's and a
	// contract that scripts split on.
	tableOnly bool
}

var memberColumns = []column{
	{header: "ID", value: func(m client.Member) string { return client.FormatID(m.ID) }},
	{header: "STATUS", value: status},
	{header: "NAME", value: func(m client.Member) string { return m.Name }},
	{header: "PEER ADDRS", value: func(m client.Member) string { return strings.Join(m.PeerURLs, ",") }},
	{header: "CLIENT ADDRS", value: func(m client.Member) string { return strings.Join(m.ClientURLs, ",") }},
	{header: "IS LEARNER", value: func(m client.Member) string { return strconv.FormatBool(m.IsLearner) }},
	{header: "IS LEADER", value: func(m client.Member) string { return strconv.FormatBool(m.IsLeader) }, tableOnly: true},
}

func status(m client.Member) string {
	if m.Started {
		return "started"
	}
	return "unstarted"
}

func simpleList(w io.Writer, r *client.ListResult) error {
	var b strings.Builder
	for _, m := range r.Members {
		sep := ""
		for _, c := range memberColumns {
			if !c.tableOnly {
				b.WriteString(sep + c.value(m))
				sep = ", "
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tableList(w io.Writer, r *client.ListResult) error {
	// tablewriter v0.0.5, as etcdctl uses, rather than v1: v1 and its dependencies build tables at
	// package initialisation, which every clusterctl command paid for at start-up whether it drew a
	// table or not. The table goes to a buffer first because v0.0.5's Render drops write errors;
	// one Write also gives the caller those errors and stdout one system call.
	var b bytes.Buffer
	t := tablewriter.NewWriter(&b)
	t.SetAutoFormatHeaders(false)
	// Addresses have no spaces to wrap at; turning wrapping off keeps a long cell on one line
	// whatever the library's idea of a wide column is.
	t.SetAutoWrapText(false)
	t.SetHeaderAlignment(tablewriter.ALIGN_CENTER)
	// etcdctl aligns cells right; the same look keeps eyes used to it at home.
	t.SetAlignment(tablewriter.ALIGN_RIGHT)
	header := make([]string, len(memberColumns))
	for i, c := range memberColumns {
		header[i] = c.header
	}
	t.SetHeader(header)
	for _, m := range r.Members {
		row := make([]string, len(memberColumns))
		for i, c := range memberColumns {
			row[i] = c.value(m)
		}
		t.Append(row)
	}
	t.Render()
	_, err := w.Write(b.Bytes())
	return err
}

func simpleAdd(w io.Writer, r *client.AddResult) error {
	as := ""
	if r.Member.IsLearner {
		as = " as learner"
	}
	_, err := fmt.Fprintf(w, "Member %s added%s to cluster %s\n\n%s", client.FormatID(r.ID), as, client.FormatID(r.Header.ClusterID), newEnvironment(r))
	return err
}

func simpleChange(w io.Writer, k Kind, r *client.ChangeResult) error {
	_, err := fmt.Fprintf(w, "Member %s %s cluster %s\n", client.FormatID(r.ID), changeVerbs[k], client.FormatID(r.Header.ClusterID))
	return err
}
