package runbooks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// rootPassword is root's password on the clusters below, in the password file the runbooks read.
const rootPassword = "s3cret-rootpw"

// The runbooks of an outage, block by block as written, on etcd 3.7.1 set up as kubeadm sets it
// up: its own CA, client certificates on both ports, auth on with a root password, the operator
// reaching it with a client certificate whose CN is no user and a password file. Nothing in a
// block is edited: the variables the runbooks document carry the TLS flags and the login, the
// operator's TLS files and login either as CLUSTERCTL_* variables or in a context named by
// CLUSTERCTL_CONTEXT (majority-loss-etcd, which turns auth on in its own cluster from the
// variables, by variables only). The keys written before each runbook are there after it
// (majority-loss-etcd writes and checks its own).
func TestRunbooksOnTLSEtcdWithAuth(t *testing.T) {
	t.Parallel()
	root, _ := runbooks(t)
	k := kubeadmLike(t)
	for _, tc := range []struct {
		book, how string
		login     []string
	}{
		{"machine-died", "variables", k.variables()},
		{"majority-loss-etcd", "variables", k.variables()},
		{"replace-member", "variables", k.variables()},
		{"machine-died", "context", k.context(t)},
		{"replace-member", "context", k.context(t)},
	} {
		t.Run(tc.book+"_by_"+tc.how, func(t *testing.T) {
			t.Parallel()
			bs, err := blocks(filepath.Join(root, "docs", "runbooks", tc.book+".md"))
			if err != nil || len(bs) == 0 {
				t.Fatalf("no sh blocks: %v", err)
			}
			work := workspace(t)
			off := portOffset(t, layoutPorts)
			if err := os.MkdirAll(filepath.Join(work, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
			groups := &processGroups{off: off, extra: append(k.members(), tc.login...)}
			defer groups.kill()
			etcdctl := k.etcdctl(work, fmt.Sprintf("https://127.0.0.1:%d", 2379+off))
			own := tc.book == "majority-loss-etcd"
			if !own {
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
					t.Fatalf("block %d of %s failed: %v\n--- block ---\n%s--- output ---\n%s%s", i+1, tc.book, err, b, out, memberLogs(work))
				}
			}
			if !own {
				if out, err := etcdctl("get", "k", "--prefix", "--keys-only"); err != nil || strings.Count(out, "k") != 5 {
					t.Fatalf("the keys written before the runbook: %v\n%s", err, out)
				}
			}
		})
	}
}

// kubeadm is a cluster's PKI as kubeadm lays it out: a CA, one server and one peer certificate
// for 127.0.0.1 that every member uses, and the operator's client certificate (CN operator, no
// user) with root's password file.
type kubeadm struct {
	server, peer      *testpki.Pair
	caFile, op, opKey string
	passwordFile      string
}

func kubeadmLike(t *testing.T) *kubeadm {
	t.Helper()
	k, dir := &kubeadm{}, t.TempDir()
	ca := testpki.Must[*testpki.CA](t)(testpki.NewCA(dir, "ca", testpki.ECDSAP256))
	k.caFile = ca.CertFile
	k.server = testpki.Must[*testpki.Pair](t)(ca.Server("member"))
	k.peer = testpki.Must[*testpki.Pair](t)(ca.Peer("member"))
	op := testpki.Must[*testpki.Pair](t)(ca.Client("operator"))
	k.op, k.opKey = op.CertFile, op.KeyFile
	k.passwordFile = filepath.Join(dir, "root.password")
	if err := os.WriteFile(k.passwordFile, []byte(rootPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

// members are the variables the runbooks document for starting a member of this cluster.
func (k *kubeadm) members() []string {
	return []string{"SCHEME=https", "MEMBER_BIN=bin/etcd", "MEMBER_TLS=" + strings.Join([]string{
		"--cert-file=" + k.server.CertFile, "--key-file=" + k.server.KeyFile, "--trusted-ca-file=" + k.caFile, "--client-cert-auth",
		"--peer-cert-file=" + k.peer.CertFile, "--peer-key-file=" + k.peer.KeyFile, "--peer-trusted-ca-file=" + k.caFile, "--peer-client-cert-auth",
	}, " ")}
}

// login is the operator's TLS files and login, by the global flags' names.
func (k *kubeadm) login() [][2]string {
	return [][2]string{{"cacert", k.caFile}, {"cert", k.op}, {"key", k.opKey}, {"user", "root"}, {"password-file", k.passwordFile}}
}

// variables are the operator's TLS files and login as CLUSTERCTL_* variables.
func (k *kubeadm) variables() []string {
	var out []string
	for _, kv := range k.login() {
		out = append(out, "CLUSTERCTL_"+strings.ToUpper(strings.ReplaceAll(kv[0], "-", "_"))+"="+kv[1])
	}
	return out
}

// context writes the operator's TLS files and login as the context "prod" of a contexts file,
// and returns the variables that name it.
func (k *kubeadm) context(t *testing.T) []string {
	t.Helper()
	var b strings.Builder
	b.WriteString("contexts:\n  - name: prod\n")
	for _, kv := range k.login() {
		fmt.Fprintf(&b, "    %s: %s\n", kv[0], kv[1])
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"CLUSTERCTL_CONTEXT=prod", "CLUSTERCTL_CONFIG=" + config}
}

// etcdctl runs bin/etcdctl in work against endpoint with the operator's TLS files, as root with
// its password (before auth is on, etcd ignores the user).
func (k *kubeadm) etcdctl(work, endpoint string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		flags := []string{"--endpoints=" + endpoint, "--cacert=" + k.caFile, "--cert=" + k.op, "--key=" + k.opKey, "--user=root:" + rootPassword}
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
