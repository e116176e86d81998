package command

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/spf13/cobra"
)

var errNoSnapshotFile = errors.New("snapshot file not provided")

func newSnapshotCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot of a member, show what a snapshot holds, restore one into a new cluster",
		Example: `  clusterctl --endpoints=10.0.0.1:2379 snapshot save backup.db
  clusterctl snapshot status backup.db -w table
  clusterctl snapshot restore backup.db --data-dir=/var/lib/clusterd --name=infra0 \
    --initial-cluster=infra0=http://10.0.1.1:2380 --initial-advertise-peer-urls=http://10.0.1.1:2380`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSnapshotSaveCmd(g), newSnapshotStatusCmd(g), newSnapshotRestoreCmd(g))
	return cmd
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

// existingFile refuses a snapshot file that is not there as an argument error: nothing was read.
func existingFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return &usageError{fmt.Errorf("snapshot file %s does not exist", path)}
	}
	if err == nil && fi.IsDir() {
		return &usageError{fmt.Errorf("snapshot file %s is a directory", path)}
	}
	return err
}

// clientMembers turns a stored membership into the client's members, ordered by ID so the
// output does not depend on map order.
func clientMembers(c *membership.Cluster) []client.Member {
	var out []client.Member
	for _, m := range c.Members {
		out = append(out, client.Member{ID: uint64(m.ID), Name: m.Name, Started: m.Started,
			PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
