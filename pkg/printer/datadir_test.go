package printer

import (
	"bytes"
	"testing"
)

func dataDirs() *DataDirs {
	ms := snapshotMembers()
	return &DataDirs{
		Dirs: []DataDir{
			{Path: "/var/lib/clusterd/infra0", Kind: "clusterd", MemberID: ID(header.MemberID), Name: "infra0", ClusterID: ID(header.ClusterID),
				Term: 3, LastIndex: 1210, CommitIndex: 1209, Applied: 1209, Members: ms, Removed: 2},
			{Path: "/mnt/infra1", Kind: "clusterd", MemberID: 0xe52329470e35c0c0, Name: "infra1", ClusterID: ID(header.ClusterID),
				Term: 2, LastIndex: 1188, CommitIndex: 1188, Applied: 1187, Members: ms, Removed: 2},
		},
		MostAdvanced: "/var/lib/clusterd/infra0",
		Reason:       "/var/lib/clusterd/infra0 (infra0) has the most advanced committed log: index 1209 at term 3, applied 1209; /mnt/infra1 has index 1188 at term 2",
		Steps: []RecoveryStep{
			{Say: "Stop every member of the cluster that still runs, on every host."},
			{Say: "Move the other data directories aside; never delete them.", Commands: []string{"mv /mnt/infra1 /mnt/infra1.aside"}},
		},
	}
}

func TestGoldenDataDir(t *testing.T) {
	runGolden(t, []goldenCase{
		{"datadir_status", DataDirStatus, func(p Printer, b *bytes.Buffer) error { return p.DataDirStatus(b, dataDirs()) }},
		{"datadir_status_none", DataDirStatus, func(p Printer, b *bytes.Buffer) error {
			r := dataDirs()
			r.MostAdvanced, r.Steps = "", nil
			r.Reason = "no data directory can be restarted from: /mnt/infra1 is left out: it is a learner's"
			r.Dirs = r.Dirs[1:]
			return p.DataDirStatus(b, r)
		}},
		{"datadir_check", DataDirCheck, func(p Printer, b *bytes.Buffer) error {
			return p.DataDirCheck(b, DataDirChecks{
				{Path: "/var/lib/etcd", Kind: "etcd", Compared: []string{"the members bucket with the backend's confState (index 12)"},
					Problems: []CheckProblem{{MemberID: 0xe52329470e35c0c0, Text: "the members bucket says learner, the backend's confState (index 12) says voter"}}},
				{Path: "backup.db", Kind: "etcd", Compared: []string{"the members bucket with the backend's confState (index 9)"}},
			})
		}},
	})
}
