package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestPromoteWaitProgressOverTLS runs `member promote --wait` with the learner behind (added,
// not started yet) on clusters with TLS and client certificates on both ports, with etcd's auth
// on: every progress line is the learner's own state, reached through the leader's status over
// the command's TLS settings and credentials, never a certificate or authentication error from
// a status call made without them. The learner then starts and the wait ends in its promotion.
func TestPromoteWaitProgressOverTLS(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	for _, server := range []struct{ name, bin string }{{"etcd", etcd.Etcd}, {"clusterd", filepath.Join(binDir, "clusterd")}} {
		t.Run(server.name, func(t *testing.T) {
			ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.RSA2048)
			if err != nil {
				t.Fatal(err)
			}
			c := startTLSCluster(t, server.bin, ca)
			pre := tlsFlags(t, c, ca)
			if server.bin == etcd.Etcd {
				pre = append(pre, enableEtcdAuth(t, c, ca)...)
			}
			ctl := cli{t: t, pre: pre}
			m3, err := c.Alloc("infra3")
			if err != nil {
				t.Fatal(err)
			}
			add := ctl.until(codeIs(12), "member", "add", "infra3", "--peer-urls="+m3.PeerURL, "--learner")
			if add.code != 0 {
				t.Fatalf("member add: %v", add)
			}
			hex := strings.Fields(add.stdout)[1]
			run := startCLI(t, filepath.Join(binDir, "clusterctl"), append(pre, "member", "promote", hex, "--wait=60s")...)
			behind := fmt.Sprintf("learner %s not in sync yet: status of learner: no client URLs: not started yet\n", hex)
			if err := proc.Poll(waitTimeout, "a progress line", func() (bool, error) {
				if r, done := run.result(); done {
					t.Fatalf("member promote --wait ended before the learner started: %v", r)
				}
				return strings.Contains(run.stderr(), behind), nil
			}); err != nil {
				t.Fatalf("%v\nstderr so far:\n%s", err, run.stderr())
			}
			startFromEnv(t, c, "infra3", envBlock(add.stdout))
			r := run.wait(t)
			if r.code != 0 || !strings.Contains(r.stdout, "Member "+hex+" promoted in cluster ") {
				t.Fatalf("member promote --wait: %v", r)
			}
			for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if !strings.HasPrefix(line, "learner "+hex+" not in sync yet: ") || strings.Contains(line, "status of leader") {
					t.Errorf("member promote --wait printed %q; want progress lines only, none failing on the leader's status", line)
				}
			}
		})
	}
}

// tlsFlags are clusterctl's flags for the TLS cluster c: its endpoints, the CA and a client
// certificate whose CN is root (etcd's user with auth on).
func tlsFlags(t *testing.T, c *cluster.Cluster, ca *testpki.CA) []string {
	t.Helper()
	root, err := ca.Client("root")
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, m := range c.Members() {
		eps = append(eps, m.ClientURL())
	}
	return []string{"--endpoints=" + strings.Join(eps, ","), "--cacert=" + ca.CertFile, "--cert=" + root.CertFile, "--key=" + root.KeyFile}
}

// enableEtcdAuth turns etcd's auth on with etcdctl (user root with the root role) and returns
// clusterctl's flags for that user.
func enableEtcdAuth(t *testing.T, c *cluster.Cluster, ca *testpki.CA) []string {
	t.Helper()
	flags := tlsFlags(t, c, ca)
	for _, args := range [][]string{{"role", "add", "root"}, {"user", "add", "root:rootpw"}, {"user", "grant-role", "root", "root"}, {"auth", "enable"}} {
		if r := runCLI(t, etcd.Etcdctl, append(flags, args...)...); r.code != 0 {
			t.Fatalf("etcdctl %s: %v", strings.Join(args, " "), r)
		}
	}
	return []string{"--user=root:rootpw"}
}
