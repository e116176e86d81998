package printer

import (
	"bytes"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/client"
)

func snapshotMembers() []client.Member {
	ms := make([]client.Member, len(members))
	for i, m := range members {
		m.IsLeader = false // a file knows no leader
		ms[i] = m
	}
	return ms
}

// TestGoldenSnapshot prints every snapshot result in every format that supports it and compares
// the output with testdata/<name>.<format>.golden.
func TestGoldenSnapshot(t *testing.T) {
	tests := []goldenCase{
		{"snapshot_save", SnapshotSave, func(p Printer, b *bytes.Buffer) error {
			return p.SnapshotSave(b, &client.SnapshotResult{Header: header, Path: "/backup/infra.db", Size: 20512,
				Checksum: "444eabbdad684098b29254de0ee40a994b1002e30f016b89c4592094957c8109"})
		}},
		{"snapshot_status", SnapshotStatus, func(p Printer, b *bytes.Buffer) error {
			return p.SnapshotStatus(b, &SnapshotStatusResult{ClusterID: ID(header.ClusterID), MemberID: ID(header.MemberID),
				Applied: 1207, Size: 20512, Checksum: "444eabbdad684098b29254de0ee40a994b1002e30f016b89c4592094957c8109",
				Members: snapshotMembers()})
		}},
		// etcdutl 3.7's output for pkg/datadir/testdata/etcd-3.7.1.db.
		{"snapshot_status_etcd", SnapshotStatus, func(p Printer, b *bytes.Buffer) error {
			return p.SnapshotStatus(b, &SnapshotStatusResult{Etcd: &EtcdSnapshotStatus{Hash: 3626235757, Revision: 5,
				TotalKey: 2, TotalSize: 24576, Version: "3.7.0"}})
		}},
		{"snapshot_restore", SnapshotRestore, func(p Printer, b *bytes.Buffer) error {
			return p.SnapshotRestore(b, &RestoreResult{Path: "/backup/infra.db", DataDir: "/var/lib/clusterd/new0", Name: "new0",
				MemberID: 0x1c6b2b2e0e2a1f3d, ClusterID: 0x5e0e7cbb1a2b3c4d, Members: []client.Member{
					{ID: 0x1c6b2b2e0e2a1f3d, Name: "new0", PeerURLs: []string{"http://10.0.1.1:2380"}},
					{ID: 0x8a2f10d3c4b5a697, Name: "new1", PeerURLs: []string{"http://10.0.1.2:2380"}},
				}})
		}},
	}
	runGolden(t, tests)
}

func TestSnapshotFormats(t *testing.T) {
	tests := []struct {
		format Format
		kind   Kind
		want   string
	}{
		{Table, SnapshotSave, `output format "table" is not supported by snapshot save (supported: simple, json)`},
		{Env, SnapshotStatus, `output format "env" is not supported by snapshot status (supported: simple, table, json)`},
		{Table, SnapshotRestore, `output format "table" is not supported by snapshot restore (supported: simple, json)`},
		{Table, SnapshotStatus, ""},
		{JSON, SnapshotSave, ""},
	}
	for _, tt := range tests {
		p, err := New(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		if got := errString(p.Check(tt.kind)); got != tt.want {
			t.Errorf("%s.Check(%s) = %q, want %q", tt.format, tt.kind, got, tt.want)
		}
		if got := errString(p.CheckFor(tt.kind, true)); got == "" {
			t.Errorf("%s.CheckFor(%s, true) accepted a command without --dry-run", tt.format, tt.kind)
		}
	}
	// A printer refuses to print what Check refuses, so nothing half-printed can escape.
	p, _ := New(Table)
	if err := p.SnapshotSave(&bytes.Buffer{}, &client.SnapshotResult{}); err == nil {
		t.Error("table printed snapshot save")
	}
}

// humanBytes is go-humanize's Bytes, which etcdutl prints sizes with.
func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 9: "9 B", 10: "10 B", 999: "999 B", 1000: "1.0 kB",
		8192: "8.2 kB", 9999: "10 kB", 24576: "25 kB", 2_100_000: "2.1 MB", 94_371_840: "94 MB", 1 << 40: "1.1 TB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
