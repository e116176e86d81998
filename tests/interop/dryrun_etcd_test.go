package interop

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// A dry run is clusterd's: real etcd 3.7.1 answers clusterd's DryRun call Unimplemented, so every
// --dry-run against it exits 18 in one line, prints nothing on stdout and changes nothing.
func TestDryRunAgainstEtcd(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	c := startCluster(t, etcd.Etcd)
	ctl := filepath.Join(binDir, "clusterctl")
	ep := "--endpoints=" + cluster.Endpoints(c.Members())
	m3, err := c.Alloc("infra3")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`\AError: --dry-run needs clusterd: the member at \S+ is not clusterd, and etcd would make the change; no change was sent\n\z`)
	for _, args := range [][]string{
		{"member", "add", "infra3", "--peer-urls=" + m3.PeerURL, "--learner", "--dry-run"},
		{"member", "remove", "infra1", "--dry-run", "-w", "json"},
		{"member", "update", "infra1", "--peer-urls=" + m3.PeerURL, "--dry-run"},
		{"member", "promote", "infra1", "--dry-run"},
	} {
		r := runCLI(t, ctl, append([]string{ep}, args...)...)
		if r.code != 18 || r.stdout != "" || !want.MatchString(r.stderr) {
			t.Errorf("%v against etcd: %v", args, r)
		}
	}
	r := runCLI(t, ctl, ep, "member", "list")
	if r.code != 0 || regexp.MustCompile(`infra3|`+regexp.QuoteMeta(m3.PeerURL)).MatchString(r.stdout) {
		t.Errorf("member list after the dry runs: %v", r)
	}
}
