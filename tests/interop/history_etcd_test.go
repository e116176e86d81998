package interop

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// Membership history is clusterd's: against real etcd 3.7.1, plain and with TLS client
// certificates, member history says so in one line and exits 32, with nothing on stdout, in
// every format and consistency.
func TestHistoryAgainstEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	ctl := filepath.Join(binDir, "clusterctl")
	want := regexp.MustCompile(`\AError: membership history is clusterd's: the member at \S+ \(version 3\.7\.1\) keeps none\n\z`)
	check := func(args ...string) {
		t.Helper()
		for _, extra := range [][]string{nil, {"--consistency=s", "-w", "json"}, {"-w", "table", "--member", "infra0"}} {
			r := runCLI(t, ctl, append(append(args, "member", "history"), extra...)...)
			if r.code != 32 || r.stdout != "" || !want.MatchString(r.stderr) {
				t.Errorf("member history %v against etcd: %v", extra, r)
			}
		}
	}
	t.Run("plain", func(t *testing.T) {
		c := startCluster(t, etcd.Etcd)
		check("--endpoints=" + cluster.Endpoints(c.Members()))
	})
	t.Run("tls", func(t *testing.T) {
		ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		root, err := ca.Client("root")
		if err != nil {
			t.Fatal(err)
		}
		c := startTLSCluster(t, etcd.Etcd, ca)
		check("--endpoints="+cluster.Endpoints(c.Members()), "--cacert="+ca.CertFile, "--cert="+root.CertFile, "--key="+root.KeyFile)
	})
}
