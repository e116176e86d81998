package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// After a majority loss on TLS clusters (client certificates on both ports; on etcd 3.7.1 auth
// on, clusterctl logged in as root with a password file), every line datadir status prints runs
// as printed through a shell: the members start with their certificates, every clusterctl line
// reaches the cluster with the operator's TLS files and login, the promotions find the members
// added back by the IDs the adds wrote. At the end the cluster has its three voters again and
// the keys written before the loss. No line holds the password.
func TestPrintedRecoveryStepsRunAsPrinted(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	for _, server := range []struct{ name, bin string }{{"etcd", etcd.Etcd}, {"clusterd", filepath.Join(binDir, "clusterd")}} {
		t.Run(server.name, func(t *testing.T) {
			ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.ECDSAP256)
			if err != nil {
				t.Fatal(err)
			}
			c := startTLSCluster(t, server.bin, ca)
			work := t.TempDir()
			login := operatorFlags(t, c, ca, work, server.bin == etcd.Etcd)
			ctl := cli{t: t, pre: login}
			if server.bin == etcd.Etcd {
				for i := range 5 {
					if r := runCLI(t, etcd.Etcdctl, append(etcdctlFlags(c, ca, work), "put", fmt.Sprintf("k%d", i), "v")...); r.code != 0 {
						t.Fatalf("put: %v", r)
					}
				}
			}
			status := loseMajority(t, c, ctl, work, memberTLSFiles(t, c, work))
			if strings.Contains(status, operatorPassword) {
				t.Fatalf("datadir status printed the password:\n%s", status)
			}
			followSteps(t, work, status)
			after := ctl.until(func(r result) bool { return strings.Count(r.stdout, ", started, ") != 3 }, "member", "list")
			for _, m := range c.Members() {
				line := fmt.Sprintf(", started, %s, %s, %s, false\n", m.Name, m.PeerURL, m.ClientURL())
				if !strings.Contains(after.stdout, line) || strings.Count(after.stdout, "\n") != 3 {
					t.Fatalf("after the recovery: want the three members as voters on their URLs, %s among them: %v", m.Name, after)
				}
			}
			if server.bin == etcd.Etcd {
				if r := runCLI(t, etcd.Etcdctl, append(etcdctlFlags(c, ca, work), "get", "k", "--prefix", "--keys-only")...); r.code != 0 || strings.Count(r.stdout, "k") != 5 {
					t.Fatalf("the keys written before the loss: %v", r)
				}
			}
		})
	}
}

const operatorPassword = "s3cret-rootpw"

// operatorFlags are the flags an operator reaches the cluster with: the CA and a client
// certificate whose CN is no user, and on etcd a password login as root, from a file, after
// auth was turned on.
func operatorFlags(t *testing.T, c *cluster.Cluster, ca *testpki.CA, work string, auth bool) []string {
	t.Helper()
	op := testpki.Must[*testpki.Pair](t)(ca.Client("operator"))
	flags := []string{"--endpoints=" + endpointsOf(c), "--cacert=" + ca.CertFile, "--cert=" + op.CertFile, "--key=" + op.KeyFile}
	if !auth {
		return flags
	}
	admin := etcdctlFlags(c, ca, work)
	for _, args := range [][]string{{"role", "add", "root"}, {"user", "add", "root:" + operatorPassword}, {"user", "grant-role", "root", "root"}, {"auth", "enable"}} {
		if r := runCLI(t, etcd.Etcdctl, append(admin, args...)...); r.code != 0 {
			t.Fatalf("etcdctl %s: %v", strings.Join(args, " "), r)
		}
	}
	pw := filepath.Join(work, "root.password")
	if err := os.WriteFile(pw, []byte(operatorPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(flags, "--user=root", "--password-file="+pw)
}

// etcdctlFlags are etcdctl's flags for c as root, by a client certificate whose CN is root.
func etcdctlFlags(c *cluster.Cluster, ca *testpki.CA, work string) []string {
	root := filepath.Join(work, "etcdctl-root")
	if _, err := os.Stat(root + ".pem"); err != nil {
		p, err := ca.Client("root")
		if err == nil {
			err = p.WriteTo(root+".pem", root+"-key.pem")
		}
		if err != nil {
			panic(err)
		}
	}
	return []string{"--endpoints=" + endpointsOf(c), "--cacert=" + ca.CertFile, "--cert=" + root + ".pem", "--key=" + root + "-key.pem"}
}

func endpointsOf(c *cluster.Cluster) string {
	var eps []string
	for _, m := range c.Members() {
		eps = append(eps, m.ClientURL())
	}
	return strings.Join(eps, ",")
}

// memberTLSFiles copies each member's certificates to pki/NAME-*.pem under work and returns
// datadir status's flags for them, with {name} standing for each member's name.
func memberTLSFiles(t *testing.T, c *cluster.Cluster, work string) []string {
	t.Helper()
	pki := filepath.Join(work, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members() {
		if err := m.Server.WriteTo(filepath.Join(pki, m.Name+"-server.pem"), filepath.Join(pki, m.Name+"-server-key.pem")); err != nil {
			t.Fatal(err)
		}
		if err := m.Peer.WriteTo(filepath.Join(pki, m.Name+"-peer.pem"), filepath.Join(pki, m.Name+"-peer-key.pem")); err != nil {
			t.Fatal(err)
		}
	}
	ca := c.Config().TLS.CertFile
	return []string{
		"--cert-file=pki/{name}-server.pem", "--key-file=pki/{name}-server-key.pem", "--trusted-ca-file=" + ca, "--client-cert-auth",
		"--peer-cert-file=pki/{name}-peer.pem", "--peer-key-file=pki/{name}-peer-key.pem", "--peer-trusted-ca-file=" + ca, "--peer-client-cert-auth",
	}
}

// loseMajority kills infra2 and infra1, stops infra0, and returns what datadir status prints,
// run in work with the operator's flags and the members' TLS files.
func loseMajority(t *testing.T, c *cluster.Cluster, ctl cli, work string, tlsFiles []string) string {
	t.Helper()
	for _, n := range []string{"infra2", "infra1"} {
		if err := c.Kill(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stop("infra0", waitTimeout); err != nil {
		t.Fatal(err)
	}
	args := []string{"datadir", "status"}
	for _, m := range c.Members() {
		args = append(args, m.DataDir)
	}
	cmd := exec.Command(filepath.Join(binDir, "clusterctl"), append(append(ctl.pre, args...), tlsFiles...)...)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("datadir status: %v\n%s", err, out)
	}
	t.Logf("datadir status:\n%s", out)
	return string(out)
}

// followSteps runs every command of the printed steps, in order, as printed, through sh in
// work: a member's start in the background, every other line to its end. A line is run again
// only where its step says so: a change etcd refuses in its first seconds (exit 12), and the
// member list that waits for the one-member cluster.
func followSteps(t *testing.T, work, status string) {
	t.Helper()
	_, steps, ok := strings.Cut(status, "\nRecovery steps:\n")
	if !ok {
		t.Fatalf("no steps printed:\n%s", status)
	}
	path := strings.Join([]string{binDir, filepath.Dir(etcd.Etcd), os.Getenv("PATH")}, string(os.PathListSeparator))
	env := []string{"PATH=" + path, "HOME=" + work}
	for i, line := range strings.Split(strings.TrimSpace(steps), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		if strings.HasPrefix(line, "etcd ") || strings.HasPrefix(line, "clusterd ") || strings.HasPrefix(line, "(set -a;") {
			startLine(t, work, env, fmt.Sprintf("member%d.log", i), line)
			continue
		}
		retry := func(r result) bool { return r.code == 12 }
		if strings.HasSuffix(line, " member list") {
			retry = func(r result) bool { return r.code != 0 }
		}
		var r result
		err := proc.Poll(2*waitTimeout, line, func() (bool, error) {
			r = shLine(t, work, env, line)
			if retry(r) {
				return false, fmt.Errorf("%v", r)
			}
			return true, nil
		})
		if err != nil || r.code != 0 {
			t.Fatalf("printed line failed: %s\n%v %v\n%s", line, err, r, logsIn(work))
		}
	}
}

// shLine runs one printed line through sh in dir.
func shLine(t *testing.T, dir string, env []string, line string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("$ %s\n%v", line, r)
	return r
}

// startLine runs a member's start line through sh in the background, in a process group of
// its own that the test's end kills, its output in dir/log.
func startLine(t *testing.T, dir string, env []string, log, line string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, log))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("$ %s &", line)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
}

// logsIn is the end of every member log in dir, for a failure message.
func logsIn(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "member*.log"))
	var b strings.Builder
	for _, l := range logs {
		fmt.Fprintf(&b, "--- end of %s ---\n%s\n", filepath.Base(l), proc.Tail(l, 15))
	}
	return b.String()
}
