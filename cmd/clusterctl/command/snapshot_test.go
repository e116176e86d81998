package command

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

func TestSnapshotFileValidate(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		format printer.Format
		want   string
	}{
		{"ok", []string{"backup.db"}, printer.Simple, ""},
		{"json", []string{"backup.db"}, printer.JSON, ""},
		{"no file", nil, printer.Simple, "snapshot file not provided"},
		{"empty file", []string{""}, printer.Simple, "snapshot file not provided"},
		{"two files", []string{"a.db", "b.db"}, printer.Simple, "too many arguments"},
	}
	for _, tt := range tests {
		o := &snapshotSaveOptions{Globals: globals(t, tt.format)}
		check(t, "save "+tt.name, o.validate(tt.args), tt.want)
	}
	for _, tt := range tests[:5] {
		o := &snapshotStatusOptions{Globals: globals(t, tt.format)}
		check(t, "status "+tt.name, o.validate(tt.args), tt.want)
	}
	o := &snapshotStatusOptions{Globals: globals(t, printer.Table)}
	check(t, "status table", o.validate([]string{"a.db"}), "")
}

func TestSnapshotRestoreValidate(t *testing.T) {
	const (
		ic  = "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,a=http://10.0.0.9:2380"
		url = "http://10.0.0.1:2380,http://10.0.0.9:2380"
	)
	tests := []struct {
		name                          string
		args                          []string
		dir, member, initial, urls, t string
		format                        printer.Format
		want                          string
	}{
		{"ok", []string{"s.db"}, "d", "a", ic, url, "tok", printer.Simple, ""},
		{"urls in other order", []string{"s.db"}, "d", "a", ic, "http://10.0.0.9:2380,http://10.0.0.1:2380", "tok", printer.JSON, ""},
		{"no file", nil, "d", "a", ic, url, "tok", printer.Simple, "snapshot file not provided"},
		{"no data dir", []string{"s.db"}, "", "a", ic, url, "tok", printer.Simple, "--data-dir not provided"},
		{"no name", []string{"s.db"}, "d", "", ic, url, "tok", printer.Simple, "--name not provided"},
		{"no initial cluster", []string{"s.db"}, "d", "a", "", url, "tok", printer.Simple, "--initial-cluster not provided"},
		{"no peer URLs", []string{"s.db"}, "d", "a", ic, "", "tok", printer.Simple, "--initial-advertise-peer-urls not provided"},
		{"empty token", []string{"s.db"}, "d", "a", ic, url, "", printer.Simple, "--initial-cluster-token must not be empty"},
		{"bad initial cluster", []string{"s.db"}, "d", "a", "a", url, "tok", printer.Simple, `--initial-cluster "a": each entry must be name=peer-url`},
		{"bad peer URL", []string{"s.db"}, "d", "a", ic, "ftp://10.0.0.1:2380", "tok", printer.Simple,
			"--initial-advertise-peer-urls: URL scheme must be http, https, unix, or unixs: ftp://10.0.0.1:2380"},
		// clusterd's words for the same check (datadir.Local), which both make.
		{"name not in cluster", []string{"s.db"}, "d", "c", ic, url, "tok", printer.Simple, `couldn't find local name "c" in the initial cluster configuration`},
		{"URLs differ", []string{"s.db"}, "d", "a", ic, "http://10.0.0.1:2380", "tok", printer.Simple,
			"--initial-cluster has a=http://10.0.0.1:2380,a=http://10.0.0.9:2380 but --initial-advertise-peer-urls is http://10.0.0.1:2380"},
		{"other member's URLs", []string{"s.db"}, "d", "b", ic, url, "tok", printer.Simple,
			"--initial-cluster has b=http://10.0.0.2:2380 but --initial-advertise-peer-urls is " + url},
	}
	for _, tt := range tests {
		o := &snapshotRestoreOptions{Globals: globals(t, tt.format), DataDir: tt.dir, Name: tt.member,
			InitialCluster: tt.initial, PeerURLs: tt.urls, Token: tt.t}
		check(t, tt.name, o.validate(tt.args), tt.want)
	}
}

// TestSnapshotSaveStatusRestore saves a snapshot from a running cluster, reads it back, restores
// it into a new one-member cluster, starts that member and lists it.
func TestSnapshotSaveStatusRestore(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	eps := servertest.Endpoints(ms)
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.db")
	// Members publish their client URLs after they join: wait, so the snapshot holds them.
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		out, errOut, code := runArgs("--endpoints="+eps, "member", "list")
		if code != 0 || strings.Count(out, ", started, ") != 3 {
			return fmt.Errorf("exit %d: %s%s", code, out, errOut)
		}
		return nil
	})

	out, errOut, code := runArgs("--endpoints="+eps, "snapshot", "save", file)
	if code != exitOK || out != "Snapshot saved at "+file+"\n" || errOut != "" {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Lstat(file + ".part"); !os.IsNotExist(err) {
		t.Errorf("%s.part left behind: %v", file, err)
	}
	// An existing file is refused before anything is sent, and left as it was.
	before, _ := os.ReadFile(file)
	if _, errOut, code := runArgs("--endpoints="+eps, "snapshot", "save", file); code != exitBadArgs ||
		errOut != "Error: "+file+" already exists: choose another file, or remove it first\n" {
		t.Errorf("save over an existing file: exit %d, %s", code, errOut)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("the existing file changed")
	}

	out, errOut, code = runArgs("snapshot", "status", file)
	if code != exitOK {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	for _, m := range ms {
		if !strings.Contains(out, ", started, "+m.Name+", "+m.PeerURL+", "+m.ClientURL+", false\n") {
			t.Errorf("status does not list %s:\n%s", m.Name, out)
		}
	}
	if !strings.Contains(out, "cluster ID: ") || !strings.Contains(out, "sha256: ") {
		t.Errorf("status:\n%s", out)
	}
	clusterID := checkSnapshotJSON(t, eps, file)

	// Restore into a new one-member cluster and start it.
	r := servertest.NewMember(t, "r0")
	initial := "r0=" + r.PeerURL
	restore := []string{"snapshot", "restore", file, "--data-dir=" + r.Dir, "--name=r0",
		"--initial-cluster=" + initial, "--initial-advertise-peer-urls=" + r.PeerURL, "--initial-cluster-token=" + servertest.Token}
	out, errOut, code = runArgs(restore...)
	if code != exitOK || !strings.HasPrefix(out, "Restored "+file+" into "+r.Dir+" as member ") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	// A second restore into the same, now non-empty, directory is refused.
	if _, errOut, code := runArgs(restore...); code != exitBadArgs || errOut != fmt.Sprintf("Error: --data-dir %q is not empty\n", r.Dir) {
		t.Errorf("restore into a non-empty dir: exit %d, %s", code, errOut)
	}
	r.Start(t, r.Config(initial, "new", nil))
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		out, errOut, code := runArgs("--endpoints="+r.ClientAddr(), "member", "list")
		if code != 0 || !strings.Contains(out, ", started, r0, "+r.PeerURL+", "+r.ClientURL+", false\n") || strings.Count(out, "\n") != 1 {
			return fmt.Errorf("exit %d: %s%s", code, out, errOut)
		}
		return nil
	})
	// The restored cluster is a new one: the old members are not in it.
	out, _, _ = runArgs("--endpoints="+r.ClientAddr(), "-w", "json", "member", "list")
	if strings.Contains(out, clusterID) {
		t.Errorf("the restored cluster kept the old cluster ID %s: %s", clusterID, out)
	}
}

// checkSnapshotJSON checks the JSON of snapshot save and snapshot status (docs/output.md), saving
// a second file beside file, and returns the cluster ID they name.
func checkSnapshotJSON(t *testing.T, eps, file string) string {
	t.Helper()
	// The JSON of save names the member the snapshot came from.
	out, errOut, code := runArgs("--endpoints="+eps, "-w", "json", "snapshot", "save", filepath.Join(filepath.Dir(file), "b2.db"))
	var saved struct {
		Path      string `json:"path"`
		Checksum  string `json:"checksum"`
		ClusterID string `json:"cluster_id"`
		MemberID  string `json:"member_id"`
		TotalSize int64  `json:"totalSize"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &saved) != nil || saved.TotalSize <= 32 || len(saved.Checksum) != 64 ||
		len(saved.ClusterID) != 16 || len(saved.MemberID) != 16 {
		t.Fatalf("save -w json: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = runArgs("-w", "json", "snapshot", "status", file)
	var st struct {
		ClusterID    string `json:"cluster_id"`
		AppliedIndex uint64 `json:"appliedIndex"`
		Members      []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.AppliedIndex == 0 || len(st.Members) != 3 ||
		st.ClusterID != saved.ClusterID {
		t.Errorf("status -w json: exit %d\n%s%s", code, out, errOut)
	}
	return saved.ClusterID
}

// TestSnapshotCorruptFilesRefused checks that a truncated file and a flipped byte are refused by
// status and restore with exit 19, and that restore writes nothing.
func TestSnapshotCorruptFilesRefused(t *testing.T) {
	ms := servertest.Start(t, 1, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.db")
	if out, errOut, code := runArgs("--endpoints="+ms[0].ClientAddr(), "snapshot", "save", file); code != exitOK {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x40
	for name, data := range map[string][]byte{
		"truncated":       good[:len(good)-100],
		"flipped":         flipped,
		"checksum only":   good[len(good)-32:],
		"checksum broken": append(append([]byte(nil), good[:len(good)-1]...), good[len(good)-1]^1),
	} {
		bad := filepath.Join(dir, name+".db")
		if err := os.WriteFile(bad, data, 0o600); err != nil {
			t.Fatal(err)
		}
		const want = "Error: snapshot file is corrupt or truncated: its SHA-256 does not match\n"
		if out, errOut, code := runArgs("snapshot", "status", bad); code != exitCorruptSnapshot || out != "" || errOut != want {
			t.Errorf("%s: status exit %d\n%s%s", name, code, out, errOut)
		}
		data := filepath.Join(dir, name+".data")
		out, errOut, code := runArgs("snapshot", "restore", bad, "--data-dir="+data, "--name=r0",
			"--initial-cluster=r0=http://127.0.0.1:1", "--initial-advertise-peer-urls=http://127.0.0.1:1")
		if code != exitCorruptSnapshot || out != "" || errOut != want {
			t.Errorf("%s: restore exit %d\n%s%s", name, code, out, errOut)
		}
		if _, err := os.Lstat(data); !os.IsNotExist(err) {
			t.Errorf("%s: restore left %s: %v", name, data, err)
		}
	}
	if _, errOut, code := runArgs("snapshot", "status", filepath.Join(dir, "missing.db")); code != exitBadArgs {
		t.Errorf("missing file: exit %d, %s", code, errOut)
	}
}

// TestOfflineCommandsIgnoreEndpoints: snapshot status and restore never build the client, so an
// endpoint the client would refuse does not fail them.
func TestOfflineCommandsIgnoreEndpoints(t *testing.T) {
	ms := servertest.Start(t, 1, nil)
	file := filepath.Join(t.TempDir(), "backup.db")
	if out, errOut, code := runArgs("--endpoints="+ms[0].ClientAddr(), "snapshot", "save", file); code != exitOK {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := runArgs("--endpoints=unix:///x", "snapshot", "status", file)
	if code != exitOK || !strings.HasPrefix(out, "cluster ID: ") || errOut != "" {
		t.Errorf("snapshot status: exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "r0")
	out, errOut, code = runArgs("--endpoints=unix:///x", "snapshot", "restore", file, "--data-dir="+dir, "--name=r0",
		"--initial-cluster=r0=http://127.0.0.1:1", "--initial-advertise-peer-urls=http://127.0.0.1:1")
	if code != exitOK || !strings.HasPrefix(out, "Restored ") || errOut != "" {
		t.Errorf("snapshot restore: exit %d\n%s%s", code, out, errOut)
	}
	// A verb that sends still refuses the same settings, before sending.
	if _, errOut, code := runArgs("--endpoints=unix:///x", "snapshot", "save", filepath.Join(t.TempDir(), "b.db")); code != exitBadArgs ||
		errOut != "Error: endpoint \"unix:///x\": only host:port, http://host:port or https://host:port is supported\n" {
		t.Errorf("save with a bad endpoint: exit %d, %s", code, errOut)
	}
}

// TestSnapshotSaveDeadEndpoint: nothing answering is a connection failure, and leaves no file.
func TestSnapshotSaveDeadEndpoint(t *testing.T) {
	file := filepath.Join(t.TempDir(), "backup.db")
	if _, errOut, code := runArgs("--endpoints="+servertest.NewMember(t, "x").ClientAddr(), "--dial-timeout=300ms", "snapshot", "save", file); code != exitCannotConnect {
		t.Errorf("exit %d, %s", code, errOut)
	}
	for _, p := range []string{file, file + ".part"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// stallingMaintenance sends the first part of a snapshot, says so, and then sends nothing more
// until the client goes away.
type stallingMaintenance struct {
	pb.UnimplementedMaintenanceServer
	sent chan struct{}
}

func (s *stallingMaintenance) Snapshot(_ *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	if err := stream.Send(&pb.SnapshotResponse{RemainingBytes: 1 << 20, Blob: make([]byte, 1<<16)}); err != nil {
		return err
	}
	close(s.sent)
	<-stream.Context().Done()
	return stream.Context().Err()
}

// Ctrl-C during a save: the process does not die of the signal but removes what it wrote, says
// so in one line, and exits with the code the shell gives a process SIGINT killed.
func TestSnapshotSaveInterruptedBySignal(t *testing.T) {
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	m := &stallingMaintenance{sent: make(chan struct{})}
	s := grpc.NewServer()
	pb.RegisterMaintenanceServer(s, m)
	go s.Serve(l)
	defer s.Stop()

	path := filepath.Join(t.TempDir(), "backup.db")
	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := runArgs("--endpoints="+l.Addr().String(), "snapshot", "save", path)
		done <- result{o, e, c}
	}()
	select {
	case <-m.sent:
	case r := <-done:
		t.Fatalf("save ended before the stream started: %+v", r)
	}
	// The handler is in place before anything is received, so before the .part file exists.
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		_, err := os.Stat(path + ".part")
		return err
	})
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("save did not stop within 10s of SIGINT")
	}
	if r.code != 130 || r.stdout != "" || r.stderr != "Error: snapshot save interrupted: signal interrupt\n" {
		t.Errorf("got exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{path, path + ".part"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
}

// A save killed with SIGKILL cannot clean up: it leaves FILE.part. While a save runs, a second
// one into the same FILE is refused naming FILE.part (exit 25); once it is dead, the next save
// takes the leftover over and succeeds.
func TestSnapshotSaveAfterSIGKILL(t *testing.T) {
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	m := &stallingMaintenance{sent: make(chan struct{})}
	s := grpc.NewServer()
	pb.RegisterMaintenanceServer(s, m)
	go s.Serve(l)
	defer s.Stop()

	path := filepath.Join(t.TempDir(), "backup.db")
	part := path + ".part"
	save := exec.Command(os.Args[0], "--endpoints="+l.Addr().String(), "snapshot", "save", path)
	save.Env = append(os.Environ(), beClusterctl+"=1")
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	defer save.Process.Kill()
	select {
	case <-m.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the save did not start streaming")
	}
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		if fi, err := os.Stat(part); err != nil || fi.Size() == 0 {
			return fmt.Errorf("%s: %v", part, err)
		}
		return nil
	})

	ms := servertest.Start(t, 1, nil)
	ep := "--endpoints=" + ms[0].ClientAddr()
	_, errOut, code := runArgs(ep, "snapshot", "save", path)
	if code != exitInUse || !strings.Contains(errOut, part) || !strings.Contains(errOut, "another snapshot save") {
		t.Errorf("save while another runs: exit %d, %s", code, errOut)
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() == 0 {
		t.Errorf("the running save's %s was touched: %v", part, err)
	}

	if err := save.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	save.Wait()
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("SIGKILL left no %s (%v): the test proves nothing", part, err)
	}
	out, errOut, code := runArgs(ep, "snapshot", "save", path)
	if code != exitOK || out != "Snapshot saved at "+path+"\n" {
		t.Fatalf("retry: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Lstat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left after the retry: %v", part, err)
	}
	if _, _, code := runArgs("snapshot", "status", path); code != exitOK {
		t.Errorf("the retried snapshot does not read back: exit %d", code)
	}
}

// A file that cannot be created is the command line's fault, found before anything is sent.
func TestSnapshotSaveIntoMissingDirectory(t *testing.T) {
	addr, conns := listener(t)
	path := filepath.Join(t.TempDir(), "nonexistent", "x.db")
	_, errOut, code := runArgs("--endpoints="+addr, "snapshot", "save", path)
	want := "Error: cannot save " + path + ": directory " + filepath.Dir(path) + " does not exist\n"
	if code != exitBadArgs || errOut != want {
		t.Errorf("exit %d, %q; want 128, %q", code, errOut, want)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections made", n)
	}
}

// etcdSnapshot is a real etcd 3.7.1 snapshot, taken with etcdctl snapshot save.
const etcdSnapshot = "../../../pkg/datadir/testdata/etcd-3.7.1.db"

// A snapshot taken from etcd is shown as etcdutl 3.7 shows it, in every format, and refused by
// restore in one line that says what restores it.
func TestSnapshotFromEtcd(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"simple", "d823f76d, 5, 2, 25 kB, 3.7.0\n"},
		{"json", `{"hash":3626235757,"revision":5,"totalKey":2,"totalSize":24576,"version":"3.7.0"}` + "\n"},
		{"table", `+----------+----------+------------+------------+---------+
|   HASH   | REVISION | TOTAL KEYS | TOTAL SIZE | VERSION |
+----------+----------+------------+------------+---------+
| d823f76d |        5 |          2 |      25 kB |   3.7.0 |
+----------+----------+------------+------------+---------+
`},
	} {
		out, errOut, code := runArgs("-w", tc.format, "snapshot", "status", etcdSnapshot)
		if code != exitOK || out != tc.want || errOut != "" {
			t.Errorf("%s: exit %d\n%s%s\nwant\n%s", tc.format, code, out, errOut, tc.want)
		}
	}
	dir := filepath.Join(t.TempDir(), "r0")
	out, errOut, code := runArgs("snapshot", "restore", etcdSnapshot, "--data-dir="+dir, "--name=r0",
		"--initial-cluster=r0=http://127.0.0.1:1", "--initial-advertise-peer-urls=http://127.0.0.1:1")
	want := "Error: snapshot file " + etcdSnapshot + " was taken from etcd: clusterctl restores clusterd snapshots; restore an etcd snapshot with etcdutl snapshot restore\n"
	if code != exitBadArgs || out != "" || errOut != want {
		t.Errorf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("restore wrote %s", dir)
	}
}

// A file whose checksum matches but which holds neither clusterd's nor etcd's database is a
// corrupt snapshot (19), for status and restore alike.
func TestSnapshotNeitherClusterdNorEtcd(t *testing.T) {
	body := bytes.Repeat([]byte("not a database "), 1000)
	sum := sha256.Sum256(body)
	file := filepath.Join(t.TempDir(), "other.db")
	if err := os.WriteFile(file, append(body, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runArgs("snapshot", "status", file); code != exitCorruptSnapshot ||
		!strings.HasPrefix(errOut, "Error: snapshot file "+file+" holds no usable clusterd or etcd database") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "r0")
	if out, errOut, code := runArgs("snapshot", "restore", file, "--data-dir="+dir, "--name=r0",
		"--initial-cluster=r0=http://127.0.0.1:1", "--initial-advertise-peer-urls=http://127.0.0.1:1"); code != exitCorruptSnapshot {
		t.Errorf("restore: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSnapshotSaveDiskFull saves into a file system too small for the snapshot: the write fails
// on this machine, which is exit 30, not the server's refusal (1), and nothing is left behind.
func TestSnapshotSaveDiskFull(t *testing.T) {
	ms := servertest.Start(t, 1, nil)
	dir := t.TempDir()
	// Smaller than any member's database: the first write already fills it.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("this test needs a small file system of its own, and mount -t tmpfs is not permitted here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	file := filepath.Join(dir, "backup.db")
	out, errOut, code := runArgs("--endpoints="+ms[0].ClientAddr(), "snapshot", "save", file)
	if code != exitLocalWrite || out != "" || !strings.HasPrefix(errOut, "Error: writing "+file+".part failed on this machine: ") ||
		strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range []string{file, file + ".part"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
}

// TestSnapshotSaveCommandTimeout: --command-timeout running out in the middle of the stream is
// a read that timed out (24), naming the member, and leaves nothing behind.
func TestSnapshotSaveCommandTimeout(t *testing.T) {
	l, err := freeport.Listen()
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterMaintenanceServer(s, &stallingMaintenance{sent: make(chan struct{})})
	go s.Serve(l)
	defer s.Stop()
	path := filepath.Join(t.TempDir(), "backup.db")
	_, errOut, code := runArgs("--endpoints="+l.Addr().String(), "--command-timeout=500ms", "snapshot", "save", path)
	want := "Error: timed out before any member answered; nothing was changed: " + l.Addr().String() +
		" (the snapshot stream was not complete after 65536 bytes)\n"
	if code != exitTimedOut || errOut != want {
		t.Errorf("exit %d, %q, want 24, %q", code, errOut, want)
	}
	for _, p := range []string{path, path + ".part"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
}
