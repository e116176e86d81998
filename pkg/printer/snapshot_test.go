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
			return p.SnapshotStatus(b, &SnapshotStatusResult{ClusterID: header.ClusterID, MemberID: header.MemberID,
				Applied: 1207, Size: 20512, Checksum: "444eabbdad684098b29254de0ee40a994b1002e30f016b89c4592094957c8109",
				Members: snapshotMembers()})
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
		if got := errString(p.CheckDryRun(tt.kind)); got == "" {
			t.Errorf("%s.CheckDryRun(%s) accepted a command without --dry-run", tt.format, tt.kind)
		}
	}
	// A printer refuses to print what Check refuses, so nothing half-printed can escape.
	p, _ := New(Table)
	if err := p.SnapshotSave(&bytes.Buffer{}, &client.SnapshotResult{}); err == nil {
		t.Error("table printed snapshot save")
	}
}
