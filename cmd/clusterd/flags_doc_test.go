package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/clusterctl/clusterctl/internal/manpage"
)

var updateMan = flag.Bool("update", false, "rewrite docs/man/clusterd.1 (make man)")

// docCommand describes clusterd for the man page generator, with the flags clusterd itself
// defines (defineFlags), so the page cannot drift from them. It lives in a test because the
// generator must not be linked into clusterd, and only this package can reach its flags.
func docCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clusterd [flags]",
		Short: "A member of a clusterd cluster: raft membership behind etcd's v3 Cluster API",
		Long: `clusterd is one member of a cluster that keeps its membership with raft and serves etcd's v3
Cluster and Maintenance APIs on its client URLs, so clusterctl and etcdctl manage it as they
manage etcd. Members talk to each other on their peer URLs.

A new cluster starts with --initial-cluster-state=new and the same --initial-cluster on every
member. A member added later with "clusterctl member add" starts with the environment that
command prints (-w env): ETCD_NAME, ETCD_INITIAL_CLUSTER and ETCD_INITIAL_CLUSTER_STATE=existing.

Every flag can also be set as ETCD_<FLAG> in the environment (upper case, - as _) or as a key of
the YAML file given by --config-file. A flag wins over the environment, which wins over the file.

--listen-metrics-urls serves /health, /metrics (Prometheus) and, with --enable-pprof, Go's
profiles; the client URLs serve gRPC only. Under systemd (Type=notify) clusterd sends READY=1
once it serves clients and has joined and applied the cluster's membership, and STOPPING=1 when it
shuts down.

Exit status: 0 when stopped by SIGINT or SIGTERM, 3 when the member has been removed from the
cluster (a unit should not restart it), 1 on any other failure.`,
		Example: `  clusterd --name m1 --initial-cluster m1=http://10.0.0.1:2380,m2=http://10.0.0.2:2380,m3=http://10.0.0.3:2380 \
    --listen-peer-urls http://10.0.0.1:2380 --initial-advertise-peer-urls http://10.0.0.1:2380 \
    --listen-client-urls http://10.0.0.1:2379 --advertise-client-urls http://10.0.0.1:2379`,
		Run: func(*cobra.Command, []string) {},
	}
	cmd.Flags().AddFlagSet(defineFlags(io.Discard))
	return cmd
}

// TestManPage fails when docs/man/clusterd.1 is not what the flags make; -update rewrites it.
func TestManPage(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "man")
	if *updateMan {
		if err := manpage.Write(docCommand(), dir); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := manpage.Stale(docCommand(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("docs/man is out of date for %v: run make man", stale)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusterd.1")); err != nil {
		t.Fatal(err)
	}
}
