package command

import (
	"errors"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/spf13/cobra"
)

var errNoSnapshotFile = errors.New("snapshot file not provided")

func newSnapshotCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot of a member, show what a snapshot holds, restore one into a new cluster",
		Example: `  clusterctl --endpoints=10.0.0.1:2379 snapshot save backup.db
  clusterctl snapshot status backup.db -w table
  clusterctl snapshot restore backup.db --data-dir=/var/lib/clusterd --name=infra0 \
    --initial-cluster=infra0=http://10.0.1.1:2380 --initial-advertise-peer-urls=http://10.0.1.1:2380`,
	}, newSnapshotSaveCmd(g), newSnapshotStatusCmd(g), newSnapshotRestoreCmd(g))
}

// snapshotFile checks the one positional argument, a file name.
func snapshotFile(args []string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", errNoSnapshotFile
	}
	if len(args) > 1 {
		return "", errors.New("too many arguments")
	}
	return args[0], nil
}

// members is the one conversion from a stored membership (what package datadir reads and
// builds) to the members the printer prints, ordered by ID so the output does not depend on map
// order. It lives here, between the two packages, so that neither the printer knows the stored
// types nor datadir the printed ones.
func members(c *membership.Cluster) []client.Member {
	list := c.List()
	out := make([]client.Member, len(list))
	for i, m := range list {
		out[i] = client.Member{ID: uint64(m.ID), Name: m.Name, Started: m.Started,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
	}
	return out
}
