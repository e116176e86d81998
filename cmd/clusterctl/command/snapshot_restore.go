package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
)

type snapshotRestoreOptions struct {
	*Globals
	Path           string
	DataDir        string
	Name           string
	InitialCluster string
	PeerURLs       string
	Token          string

	initial []datadir.Initial
}

func newSnapshotRestoreCmd(g *Globals) *cobra.Command {
	o := &snapshotRestoreOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --name NAME --initial-cluster NAME=URL,... --initial-advertise-peer-urls URL,...",
		Short: "Build the data directory of a member of a new cluster from a snapshot file",
		Long: `Check FILE's SHA-256 and write a data directory for member NAME of a new cluster described by
--initial-cluster and --initial-cluster-token. The new cluster keeps no member of the old one:
every old member ID is recorded as removed, so no old member can join it. Offline: nothing is
sent. A corrupt or truncated FILE, or a DIR that is not empty, is refused and nothing is written.
Then start the member with clusterd and the same --data-dir, --name, --initial-cluster,
--initial-advertise-peer-urls and --initial-cluster-token.`,
		Example: `  clusterctl snapshot restore backup.db --data-dir=/var/lib/clusterd/infra0 --name=infra0 \
    --initial-cluster=infra0=http://10.0.1.1:2380 --initial-advertise-peer-urls=http://10.0.1.1:2380 \
    --initial-cluster-token=restored-1`,
		RunE: runE(g, printer.SnapshotRestore, o),
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "", "the new member's data directory: must not exist or be empty")
	f.StringVar(&o.Name, "name", "", "the new member's name, one of --initial-cluster's")
	f.StringVar(&o.InitialCluster, "initial-cluster", "", "every member of the new cluster: name=peer-url,...")
	f.StringVar(&o.PeerURLs, "initial-advertise-peer-urls", "", "the new member's peer URLs, as in --initial-cluster")
	f.StringVar(&o.Token, "initial-cluster-token", datadir.DefaultClusterToken, "the new cluster's token, as given to clusterd")
	return cmd
}

func (o *snapshotRestoreOptions) validate(args []string) error {
	var err error
	if o.Path, err = snapshotFile(args); err != nil {
		return err
	}
	switch {
	case o.DataDir == "":
		return errors.New("--data-dir not provided")
	case o.Name == "":
		return errors.New("--name not provided")
	case o.InitialCluster == "":
		return errors.New("--initial-cluster not provided")
	case o.PeerURLs == "":
		return errors.New("--initial-advertise-peer-urls not provided")
	case o.Token == "":
		return errors.New("--initial-cluster-token must not be empty")
	}
	if o.initial, err = datadir.ParseInitialCluster(o.InitialCluster); err != nil {
		return err
	}
	urls, err := peerURLs(o.PeerURLs)
	if err != nil {
		return fmt.Errorf("--initial-advertise-peer-urls: %w", err)
	}
	// The same check clusterd makes before it starts this member with the same flags.
	_, err = datadir.Local(o.initial, o.Name, urls)
	return err
}

// run restores offline: it never calls Client, so no client setting can fail it. Every check of
// the file and the directory is datadir.Restore's, made once; its typed errors go to exit.go
// untouched.
func (o *snapshotRestoreOptions) run(context.Context) error {
	r, err := datadir.Restore(datadir.RestoreConfig{Snapshot: o.Path, DataDir: o.DataDir, Name: o.Name,
		Initial: o.initial, Token: o.Token})
	if err != nil {
		return err
	}
	return o.Printer.SnapshotRestore(o.Out, &printer.RestoreResult{Path: o.Path, DataDir: o.DataDir, Name: o.Name,
		MemberID: printer.ID(r.MemberID), ClusterID: printer.ID(r.Cluster.ID), Members: members(r.Cluster)})
}
