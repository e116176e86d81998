package command

import (
	"context"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type snapshotStatusOptions struct {
	*Globals
	Path string
}

func newSnapshotStatusCmd(g *Globals) *cobra.Command {
	o := &snapshotStatusOptions{Globals: g}
	return &cobra.Command{
		Use:   "status FILE",
		Short: "Show what a snapshot file holds",
		Long: `Check a snapshot file's SHA-256 and print what it holds: the cluster ID, the member it was
taken from, its applied raft index, its size, its SHA-256 and its members. Offline: nothing is sent.

A snapshot taken from etcd (by clusterctl or etcdctl snapshot save) holds etcd's key space rather
than a membership: it is shown as etcdutl snapshot status shows it, in every format (hash,
revision, total keys, total size, version).`,
		Example: `  clusterctl snapshot status backup.db -w table`,
		RunE:    runE(g, printer.SnapshotStatus, o),
	}
}

func (o *snapshotStatusOptions) validate(args []string) error {
	var err error
	o.Path, err = snapshotFile(args)
	return err
}

// run reads the file offline: it never calls Client, so no client setting can fail it.
func (o *snapshotStatusOptions) run(context.Context) error {
	st, err := datadir.ReadStatus(o.Path)
	if err != nil {
		return err
	}
	if e := st.Etcd; e != nil {
		return o.Printer.SnapshotStatus(o.Out, &printer.SnapshotStatusResult{Etcd: (*printer.EtcdSnapshotStatus)(e)})
	}
	info := st.Clusterd
	return o.Printer.SnapshotStatus(o.Out, &printer.SnapshotStatusResult{
		ClusterID: printer.ID(info.ClusterID), MemberID: printer.ID(info.MemberID), Applied: info.Applied,
		Size: info.Size, Checksum: info.Checksum, Members: members(info.Cluster),
	})
}
