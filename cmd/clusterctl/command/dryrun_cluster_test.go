package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/freeport"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// The dry run's verdict against a real in-process clusterd, compared with what the real command
// then does. The member helpers follow pkg/server/cluster_test.go.

const testElectionTimeout = 200 * time.Millisecond

type testMember struct {
	name, dir, peerURL, clientAddr string
	cancel                         context.CancelFunc
	done                           chan error
}

func newTestMember(t *testing.T, name string) *testMember {
	t.Helper()
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	return &testMember{name: name, dir: filepath.Join(t.TempDir(), name),
		peerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), clientAddr: fmt.Sprintf("127.0.0.1:%d", ports[1])}
}

func (m *testMember) start(t *testing.T, initialCluster, state string) {
	t.Helper()
	srv, err := server.New(server.Config{
		Name: m.name, DataDir: m.dir,
		ListenClientURLs: []string{"http://" + m.clientAddr}, AdvertiseClientURLs: []string{"http://" + m.clientAddr},
		ListenPeerURLs: []string{m.peerURL}, InitialAdvertisePeerURLs: []string{m.peerURL},
		InitialCluster: initialCluster, InitialClusterState: state, InitialClusterToken: "test",
		HeartbeatInterval: 20 * time.Millisecond, ElectionTimeout: testElectionTimeout,
		SnapshotCount: 10000, StrictReconfigCheck: true, MaxLearners: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan error, 1)
	go func() { m.done <- srv.Run(ctx) }()
	t.Cleanup(m.stop)
}

func (m *testMember) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
	}
}

// startTestCluster starts n members and waits until every one lists them all.
func startTestCluster(t *testing.T, n int) []*testMember {
	t.Helper()
	var ms []*testMember
	var initial []string
	for i := range n {
		m := newTestMember(t, fmt.Sprintf("m%d", i))
		ms = append(ms, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	for _, m := range ms {
		m.start(t, strings.Join(initial, ","), "new")
	}
	for _, m := range ms {
		waitFor(t, func() error {
			stdout, stderr, code := runArgs("--endpoints="+m.clientAddr, "member", "list")
			if code != 0 || strings.Count(stdout, "\n") != n {
				return fmt.Errorf("exit %d: %s%s", code, stdout, stderr)
			}
			return nil
		})
	}
	return ms
}

func waitFor(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verdictMatches runs a change with --dry-run and then for real, and checks that both exit with
// want, print the same stderr, and that the dry run says "would be accepted" exactly when the
// real change succeeds. It returns the real command's stderr.
func verdictMatches(t *testing.T, endpoints string, want int, args ...string) string {
	t.Helper()
	args = append([]string{"--endpoints=" + endpoints}, args...)
	dryOut, dryErr, dryCode := runArgs(append(args, "--dry-run")...)
	out, errOut, code := runArgs(args...)
	t.Logf("%v --dry-run:\n%s%s", args[1:], dryOut, dryErr)
	if dryCode != want || code != want {
		t.Fatalf("%v: dry run exit %d, real exit %d, want %d\ndry run:\n%s%s\nreal:\n%s%s", args, dryCode, code, want, dryOut, dryErr, out, errOut)
	}
	if dryErr != errOut {
		t.Errorf("%v: stderr of dry run %q, of real command %q", args, dryErr, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(dryOut, "\n"), "\n")
	last := lines[len(lines)-1]
	if accepted := last == "would be accepted"; accepted != (code == 0) {
		t.Errorf("%v: dry run says %q, real command exit %d", args, last, code)
	}
	if code != 0 && last != "would be refused: "+strings.TrimSuffix(strings.TrimPrefix(errOut, "Error: "), "\n") {
		t.Errorf("%v: dry run says %q, real command %q", args, last, errOut)
	}
	return errOut
}

func TestDryRunVerdictHealthy(t *testing.T) {
	ms := startTestCluster(t, 3)
	eps := ms[0].clientAddr + "," + ms[1].clientAddr + "," + ms[2].clientAddr
	spare := newTestMember(t, "x1")
	learner := newTestMember(t, "l1")

	verdictMatches(t, eps, exitRefused, "member", "promote", "m1")
	verdictMatches(t, eps, exitOK, "member", "add", "x1", "--peer-urls="+spare.peerURL)
	verdictMatches(t, eps, exitOK, "member", "remove", "x1")
	verdictMatches(t, eps, exitOK, "member", "add", "l1", "--peer-urls="+learner.peerURL, "--learner")
	verdictMatches(t, eps, exitLearnerLimit, "member", "add", "l2", "--peer-urls="+newTestMember(t, "l2").peerURL, "--learner")
	verdictMatches(t, eps, exitLearnerNotReady, "member", "promote", "l1")
	verdictMatches(t, eps, exitAlreadyExists, "member", "update", "m1", "--peer-urls="+ms[0].peerURL)
	verdictMatches(t, eps, exitNotFound, "member", "remove", "00000000000000ff")

	var initial []string
	for _, m := range append(ms, learner) {
		initial = append(initial, m.name+"="+m.peerURL)
	}
	learner.start(t, strings.Join(initial, ","), "existing")
	waitFor(t, func() error {
		stdout, stderr, code := runArgs("--endpoints="+eps, "member", "promote", "l1", "--dry-run")
		if code != exitOK {
			return fmt.Errorf("exit %d: %s%s", code, stdout, stderr)
		}
		return nil
	})
	if stdout, stderr, code := runArgs("--endpoints="+eps, "member", "promote", "l1"); code != exitOK {
		t.Fatalf("promote after an accepting dry run: exit %d: %s%s", code, stdout, stderr)
	}
	verdictMatches(t, eps, exitOK, "member", "update", "l1", "--peer-urls=http://"+newTestMember(t, "l1b").clientAddr)
}

func TestDryRunVerdictOneMemberStopped(t *testing.T) {
	ms := startTestCluster(t, 3)
	ms[2].stop()
	eps := ms[0].clientAddr + "," + ms[1].clientAddr
	// Until the leader has gone an election timeout without hearing from the stopped member,
	// it still counts it as connected.
	time.Sleep(3 * testElectionTimeout)
	waitFor(t, func() error {
		if _, stderr, code := runArgs("--endpoints="+eps, "member", "list"); code != 0 {
			return errors.New(stderr)
		}
		return nil
	})

	verdictMatches(t, eps, exitQuorumProtection, "member", "add", "x1", "--peer-urls="+newTestMember(t, "x1").peerURL)
	verdictMatches(t, eps, exitQuorumProtection, "member", "remove", "m1")
	verdictMatches(t, eps, exitQuorumProtection, "member", "update", "m1", "--peer-urls="+newTestMember(t, "m1b").peerURL)
	verdictMatches(t, eps, exitOK, "member", "add", "l1", "--peer-urls="+newTestMember(t, "l1").peerURL, "--learner")
	verdictMatches(t, eps, exitLearnerNotReady, "member", "promote", "l1")
	verdictMatches(t, eps, exitOK, "member", "remove", "l1")
	// A member that is down may go when the rest keep their quorum.
	if stderr := verdictMatches(t, eps, exitOK, "member", "remove", "m2"); stderr != "" {
		t.Errorf("remove from three voters: stderr %q", stderr)
	}
	// Two voters left: removing one warns first, and still succeeds.
	if stderr := verdictMatches(t, eps, exitOK, "member", "remove", "m1"); stderr != twoVoterWarning+"\n" {
		t.Errorf("remove from two voters: stderr %q", stderr)
	}
}
