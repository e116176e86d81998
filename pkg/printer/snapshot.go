package printer

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/clusterctl/clusterctl/pkg/client"
)

// SnapshotStatusResult is what a snapshot file holds, as snapshot status prints it. A snapshot
// taken from etcd holds a key space rather than a membership: Etcd is then set, and only it is
// printed, as etcdutl prints it. The tags are the JSON of a clusterd snapshot.
type SnapshotStatusResult struct {
	Etcd *EtcdSnapshotStatus `json:"-"`

	ClusterID ID `json:"cluster_id"`
	// MemberID is the member the snapshot was taken from.
	MemberID ID         `json:"member_id"`
	Applied  uint64     `json:"appliedIndex"`
	Size     int64      `json:"totalSize"` // bytes, checksum included
	Checksum string     `json:"checksum"`  // hex SHA-256 of the database part
	Members  memberList `json:"members"`
}

// EtcdSnapshotStatus is what `etcdutl snapshot status` shows of a snapshot taken from etcd, under
// the JSON names etcdutl's snapshot.Status marshals with.
type EtcdSnapshotStatus struct {
	Hash      uint32 `json:"hash"` // etcdutl's CRC-32 over the buckets, not a checksum of the file
	Revision  int64  `json:"revision"`
	TotalKey  int    `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
	Version   string `json:"version"` // the storage version; empty before etcd 3.6
}

// RestoreResult is the data directory snapshot restore created, with its JSON.
type RestoreResult struct {
	Path      string `json:"path"` // the snapshot file
	DataDir   string `json:"dataDir"`
	Name      string `json:"name"`
	MemberID  ID     `json:"member_id"`
	ClusterID ID     `json:"cluster_id"`
	// Members are the new cluster's, as --initial-cluster gave them.
	Members memberList `json:"members"`
}

// SnapshotSave prints the result of snapshot save.
func (p Printer) SnapshotSave(w io.Writer, r *client.SnapshotResult) error {
	return p.print(w, p.Check(SnapshotSave), savedJSON{Path: r.Path, TotalSize: r.Size, Checksum: r.Checksum,
		ClusterID: client.FormatID(r.Header.ClusterID), MemberID: client.FormatID(r.Header.MemberID)}, func(b *bytes.Buffer) {
		// etcdctl's words, so scripts written for it keep matching.
		fmt.Fprintf(b, "Snapshot saved at %s\n", r.Path)
	})
}

// SnapshotStatus prints the result of snapshot status: in table, a table of the fields, a blank
// line, and a table of the members.
func (p Printer) SnapshotStatus(w io.Writer, r *SnapshotStatusResult) error {
	var v any = r
	if r.Etcd != nil {
		v = r.Etcd
	}
	return p.print(w, p.Check(SnapshotStatus), v, func(b *bytes.Buffer) {
		switch {
		case r.Etcd != nil:
			drawRows(b, p.format, etcdSnapshotColumns, []*EtcdSnapshotStatus{r.Etcd})
			return
		case p.format == Table:
			table(b, snapshotColumns, []*SnapshotStatusResult{r})
			b.WriteByte('\n')
		default:
			keyValues(b, snapshotColumns, r)
		}
		// The member lines and rows are member list's, so the same parsing reads both.
		drawRows(b, p.format, fileMemberColumns, r.Members)
	})
}

// SnapshotRestore prints the result of snapshot restore.
func (p Printer) SnapshotRestore(w io.Writer, r *RestoreResult) error {
	return p.print(w, p.Check(SnapshotRestore), r, func(b *bytes.Buffer) {
		fmt.Fprintf(b, "Restored %s into %s as member %s (%s) of new cluster %s\n", r.Path, r.DataDir, r.MemberID, r.Name, r.ClusterID)
		drawRows(b, p.format, fileMemberColumns, r.Members)
	})
}

// snapshotColumns are snapshot status's key: value lines and table columns, in order.
var snapshotColumns = []column[*SnapshotStatusResult]{
	{name: "cluster ID", value: func(r *SnapshotStatusResult) string { return r.ClusterID.String() }},
	{name: "member ID", value: func(r *SnapshotStatusResult) string { return r.MemberID.String() }},
	{name: "applied index", value: func(r *SnapshotStatusResult) string { return strconv.FormatUint(r.Applied, 10) }},
	{name: "size", value: func(r *SnapshotStatusResult) string { return strconv.FormatInt(r.Size, 10) }},
	{name: "sha256", value: func(r *SnapshotStatusResult) string { return r.Checksum }},
}

// etcdSnapshotColumns are etcdutl 3.7's snapshot status fields, in its order, with its header
// words and its formatting (the hash in hex without padding, the size as go-humanize's Bytes),
// so that its simple line and its table come out letter for letter.
var etcdSnapshotColumns = []column[*EtcdSnapshotStatus]{
	{name: "hash", value: func(r *EtcdSnapshotStatus) string { return strconv.FormatUint(uint64(r.Hash), 16) }},
	{name: "revision", value: func(r *EtcdSnapshotStatus) string { return strconv.FormatInt(r.Revision, 10) }},
	{name: "total keys", value: func(r *EtcdSnapshotStatus) string { return strconv.Itoa(r.TotalKey) }},
	{name: "total size", value: func(r *EtcdSnapshotStatus) string { return humanBytes(r.TotalSize) }},
	{name: "version", value: func(r *EtcdSnapshotStatus) string { return r.Version }},
}

// humanBytes writes a size as etcdutl does (go-humanize's Bytes): SI units, one decimal below
// ten, none above ("8.2 kB", "25 kB"), and plain bytes below ten.
func humanBytes(n int64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	e := int(math.Floor(math.Log(float64(n)) / math.Log(1000)))
	val := math.Floor(float64(n)/math.Pow(1000, float64(e))*10+0.5) / 10
	if val < 10 {
		return fmt.Sprintf("%.1f %s", val, units[e])
	}
	return fmt.Sprintf("%.0f %s", val, units[e])
}

// The JSON of snapshot save (docs/output.md), whose keys, like those of SnapshotStatusResult and
// RestoreResult, follow etcd where etcd prints the same fact: etcdutl's snapshot status for the
// size (totalSize), etcdctl's header for IDs (cluster_id, member_id). The SHA-256 is not
// etcdutl's crc32 hash, so it has a key of its own. Never rename a field.
type savedJSON struct {
	Path      string `json:"path"`
	TotalSize int64  `json:"totalSize"`
	Checksum  string `json:"checksum"`
	ClusterID string `json:"cluster_id"`
	MemberID  string `json:"member_id"`
}
