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

// SnapshotStatusResult is what a snapshot file holds, as snapshot status prints it.
type SnapshotStatusResult struct {
	ClusterID uint64
	// MemberID is the member the snapshot was taken from.
	MemberID uint64
	Applied  uint64
	Size     int64  // bytes, checksum included
	Checksum string // hex SHA-256 of the database part
	Members  []client.Member
}

// RestoreResult is the data directory snapshot restore created.
type RestoreResult struct {
	Path      string // the snapshot file
	DataDir   string
	Name      string
	MemberID  uint64
	ClusterID uint64
	// Members are the new cluster's, as --initial-cluster gave them.
	Members []client.Member
}

// SnapshotSave prints the result of snapshot save.
func (p Printer) SnapshotSave(w io.Writer, r *client.SnapshotResult) error {
	if err := p.Check(SnapshotSave); err != nil {
		return err
	}
	return p.saved(w, r)
}

// SnapshotStatus prints the result of snapshot status.
func (p Printer) SnapshotStatus(w io.Writer, r *SnapshotStatusResult) error {
	if err := p.Check(SnapshotStatus); err != nil {
		return err
	}
	return p.status(w, r)
}

// SnapshotRestore prints the result of snapshot restore.
func (p Printer) SnapshotRestore(w io.Writer, r *RestoreResult) error {
	if err := p.Check(SnapshotRestore); err != nil {
		return err
	}
	return p.restored(w, r)
}

func simpleSaved(w io.Writer, r *client.SnapshotResult) error {
	// etcdctl's words, so scripts written for it keep matching.
	_, err := fmt.Fprintf(w, "Snapshot saved at %s\n", r.Path)
	return err
}

// snapshotFields are snapshot status's key: value lines and table columns, in order.
func snapshotFields(r *SnapshotStatusResult) [][2]string {
	return [][2]string{
		{"cluster ID", client.FormatID(r.ClusterID)},
		{"member ID", client.FormatID(r.MemberID)},
		{"applied index", strconv.FormatUint(r.Applied, 10)},
		{"size", strconv.FormatInt(r.Size, 10)},
		{"sha256", r.Checksum},
	}
}

func simpleSnapshotStatus(w io.Writer, r *SnapshotStatusResult) error {
	for _, f := range snapshotFields(r) {
		if _, err := fmt.Fprintf(w, "%s: %s\n", f[0], f[1]); err != nil {
			return err
		}
	}
	// The member lines are member list's, so the same parsing reads both.
	return simpleList(w, &client.ListResult{Members: r.Members})
}

// snapshotTable draws a table the way member list's table is drawn (etcdctl's look: cells
// aligned right, no wrapping) into b; tablewriter's Render drops write errors, so the caller
// writes b itself.
func snapshotTable(b *bytes.Buffer, header []string, rows [][]string) {
	t := tablewriter.NewWriter(b)
	t.SetAutoFormatHeaders(false)
	t.SetAutoWrapText(false)
	t.SetHeaderAlignment(tablewriter.ALIGN_CENTER)
	t.SetAlignment(tablewriter.ALIGN_RIGHT)
	t.SetHeader(header)
	t.AppendBulk(rows)
	t.Render()
}

// snapshotMemberHeader leaves out member list's IS LEADER: a file has no leader.
var snapshotMemberHeader = []string{"ID", "STATUS", "NAME", "PEER ADDRS", "CLIENT ADDRS", "IS LEARNER"}

func tableSnapshotStatus(w io.Writer, r *SnapshotStatusResult) error {
	var header, row []string
	for _, f := range snapshotFields(r) {
		header = append(header, strings.ToUpper(f[0]))
		row = append(row, f[1])
	}
	var b bytes.Buffer
	snapshotTable(&b, header, [][]string{row})
	b.WriteByte('\n')
	var rows [][]string
	for _, m := range r.Members {
		rows = append(rows, []string{client.FormatID(m.ID), status(m), m.Name, strings.Join(m.PeerURLs, ","),
			strings.Join(m.ClientURLs, ","), strconv.FormatBool(m.IsLearner)})
	}
	snapshotTable(&b, snapshotMemberHeader, rows)
	_, err := w.Write(b.Bytes())
	return err
}

// The JSON of the snapshot commands: field names are a contract, never rename one.

type savedJSON struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Checksum  string `json:"checksum"`
	ClusterID string `json:"clusterID"`
	MemberID  string `json:"memberID"`
}

type snapshotStatusJSON struct {
	ClusterID    string       `json:"clusterID"`
	MemberID     string       `json:"memberID"`
	AppliedIndex uint64       `json:"appliedIndex"`
	Size         int64        `json:"size"`
	Checksum     string       `json:"checksum"`
	Members      []memberJSON `json:"members"`
}

type restoredJSON struct {
	Path      string       `json:"path"`
	DataDir   string       `json:"dataDir"`
	Name      string       `json:"name"`
	MemberID  string       `json:"memberID"`
	ClusterID string       `json:"clusterID"`
	Members   []memberJSON `json:"members"`
}

func jsonSaved(w io.Writer, r *client.SnapshotResult) error {
	return writeJSON(w, savedJSON{Path: r.Path, Size: r.Size, Checksum: r.Checksum,
		ClusterID: client.FormatID(r.Header.ClusterID), MemberID: client.FormatID(r.Header.MemberID)})
}

func jsonSnapshotStatus(w io.Writer, r *SnapshotStatusResult) error {
	return writeJSON(w, snapshotStatusJSON{ClusterID: client.FormatID(r.ClusterID), MemberID: client.FormatID(r.MemberID),
		AppliedIndex: r.Applied, Size: r.Size, Checksum: r.Checksum, Members: toJSONMembers(r.Members)})
}

func simpleRestored(w io.Writer, r *RestoreResult) error {
	if _, err := fmt.Fprintf(w, "Restored %s into %s as member %s (%s) of new cluster %s\n",
		r.Path, r.DataDir, client.FormatID(r.MemberID), r.Name, client.FormatID(r.ClusterID)); err != nil {
		return err
	}
	return simpleList(w, &client.ListResult{Members: r.Members})
}

func jsonRestored(w io.Writer, r *RestoreResult) error {
	return writeJSON(w, restoredJSON{Path: r.Path, DataDir: r.DataDir, Name: r.Name, MemberID: client.FormatID(r.MemberID),
		ClusterID: client.FormatID(r.ClusterID), Members: toJSONMembers(r.Members)})
}
