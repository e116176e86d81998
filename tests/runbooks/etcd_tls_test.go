package runbooks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/proc"
	"github.com/clusterctl/clusterctl/internal/testpki"
)

// outageRunbooks are the runbooks of an outage on etcd, run on etcd 3.7.1 with TLS and auth.
var outageRunbooks = []string{"machine-died", "majority-loss-etcd", "replace-member"}

// rootPassword is root's password on those clusters, in the password file the runbooks read.
const rootPassword = "s3cret-rootpw"

// The runbooks of an outage, block by block as written, on etcd 3.7.1 set up as kubeadm sets it
// up: its own CA, client certificates on both ports, auth on with a root password, the operator
// reaching it with a client certificate whose CN is no user and a password file. Nothing in a
// block is edited: the variables the runbooks document carry the TLS flags and the login. The
// keys written before each runbook are there after it (majority-loss-etcd checks its own).
func TestRunbooksOnTLSEtcdWithAuth(t *testing.T) {
	root, _ := runbooks(t)
	work := workspace(t)
	off := portOffset(t, layoutPorts)
	env := kubeadmLike(t)
	for _, name := range outageRunbooks {
		t.Run(name, func(t *testing.T) {
			bs, err := blocks(filepath.Join(root, "docs", "runbooks", name+".md"))
			if err != nil || len(bs) == 0 {
				t.Fatalf("no sh blocks: %v", err)
			}
			if err := os.RemoveAll(filepath.Join(work, "data")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(work, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
			groups := &processGroups{off: off, extra: env}
			defer groups.kill()
			etcdctl := etcdctlAs(work, env, fmt.Sprintf("https://127.0.0.1:%d", 2379+off))
			if name != "majority-loss-etcd" {
				startLikeMakeRun(t, groups, work)
				enableAuth(t, etcdctl)
				for i := range 5 {
					if out, err := etcdctl("put", fmt.Sprintf("k%d", i), "before"); err != nil {
						t.Fatalf("put: %v\n%s", err, out)
					}
				}
			}
			for i, b := range bs {
				out, err := groups.run(work, 3*time.Minute, b)
				if err != nil {
					t.Fatalf("block %d of %s failed: %v\n--- block ---\n%s--- output ---\n%s%s", i+1, name, err, b, out, memberLogs(work))
				}
			}
			if name != "majority-loss-etcd" {
				if out, err := etcdctl("get", "k", "--prefix", "--keys-only"); err != nil || strings.Count(out, "k") != 5 {
					t.Fatalf("the keys written before the runbook: %v\n%s", err, out)
				}
			}
		})
	}
}

// kubeadmLike makes a CA, a server and a peer certificate for 127.0.0.1, the operator's client
// certificate (CN operator, no user) and root's password file, and returns the variables the
// runbooks document for such a cluster.
func kubeadmLike(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.Must[*testpki.CA](t)(testpki.NewCA(dir, "ca", testpki.ECDSAP256))
	server := testpki.Must[*testpki.Pair](t)(ca.Server("member"))
	peer := testpki.Must[*testpki.Pair](t)(ca.Peer("member"))
	op := testpki.Must[*testpki.Pair](t)(ca.Client("operator"))
	pw := filepath.Join(dir, "root.password")
	if err := os.WriteFile(pw, []byte(rootPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	memberTLS := strings.Join([]string{
		"--cert-file=" + server.CertFile, "--key-file=" + server.KeyFile, "--trusted-ca-file=" + ca.CertFile, "--client-cert-auth",
		"--peer-cert-file=" + peer.CertFile, "--peer-key-file=" + peer.KeyFile, "--peer-trusted-ca-file=" + ca.CertFile, "--peer-client-cert-auth",
	}, " ")
	return []string{
		"SCHEME=https", "MEMBER_TLS=" + memberTLS, "MEMBER_BIN=bin/etcd",
		"CLUSTERCTL_CACERT=" + ca.CertFile, "CLUSTERCTL_CERT=" + op.CertFile, "CLUSTERCTL_KEY=" + op.KeyFile,
		"CLUSTERCTL_USER=root", "CLUSTERCTL_PASSWORD_FILE=" + pw,
	}
}

// etcdctlAs runs bin/etcdctl in work against endpoint with the operator's TLS files from env,
// as root with its password once auth is on (before, etcd ignores the user).
func etcdctlAs(work string, env []string, endpoint string) func(args ...string) (string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return func(args ...string) (string, error) {
		flags := []string{"--endpoints=" + endpoint, "--cacert=" + vars["CLUSTERCTL_CACERT"], "--cert=" + vars["CLUSTERCTL_CERT"],
			"--key=" + vars["CLUSTERCTL_KEY"], "--user=root:" + rootPassword}
		cmd := exec.Command("bin/etcdctl", append(flags, args...)...)
		cmd.Dir = work
		cmd.Env = withoutEtcdVars()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// startLikeMakeRun starts etcd members laid out as make run's (infra0, infra1 and infra2 on its
// ports moved by the offset, data in data/), with the TLS flags of MEMBER_TLS, and waits until
// the three are listed as started.
func startLikeMakeRun(t *testing.T, groups *processGroups, work string) {
	t.Helper()
	var ic []string
	for i, base := range []int{2379, 22379, 32379} {
		ic = append(ic, fmt.Sprintf("infra%d=https://127.0.0.1:%d", i, base+1+groups.off))
	}
	for i, base := range []int{2379, 22379, 32379} {
		client, peer := fmt.Sprintf("https://127.0.0.1:%d", base+groups.off), fmt.Sprintf("https://127.0.0.1:%d", base+1+groups.off)
		script := fmt.Sprintf("exec bin/etcd --name infra%d --data-dir data/infra%d --initial-cluster %s --initial-cluster-token make-run "+
			"--listen-client-urls %s --advertise-client-urls %s --listen-peer-urls %s --initial-advertise-peer-urls %s $MEMBER_TLS >>data/infra%d.log 2>&1",
			i, i, strings.Join(ic, ","), client, client, peer, peer, i)
		if _, err := groups.start(work, "bash", "-c", script); err != nil {
			t.Fatal(err)
		}
	}
	err := proc.Poll(30*time.Second, "the etcd cluster lists its members as started", func() (bool, error) {
		cmd := exec.Command("bin/clusterctl", "--endpoints="+localEndpoints(groups.off), "member", "list")
		cmd.Dir = work
		cmd.Env = groups.env()
		out, err := cmd.CombinedOutput()
		if err == nil && strings.Count(string(out), ", started, ") == 3 {
			return true, nil
		}
		return false, fmt.Errorf("%v: %s", err, out)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, memberLogs(work))
	}
}

// enableAuth turns etcd's auth on as kubeadm's clusters have it: root, in the root role, with
// the password of the password file.
func enableAuth(t *testing.T, etcdctl func(args ...string) (string, error)) {
	t.Helper()
	for _, args := range [][]string{{"role", "add", "root"}, {"user", "add", "root", "--new-user-password=" + rootPassword}, {"user", "grant-role", "root", "root"}, {"auth", "enable"}} {
		if out, err := etcdctl(args...); err != nil {
			t.Fatalf("etcdctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
