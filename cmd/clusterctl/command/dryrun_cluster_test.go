package command

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
)

// The dry run's verdict against a real in-process clusterd, compared with what the real command
// then does.

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
	ms := servertest.Start(t, 3, nil)
	eps := servertest.Endpoints(ms)
	spare := servertest.NewMember(t, "x1")
	learner := servertest.NewMember(t, "l1")

	verdictMatches(t, eps, exitRefused, "member", "promote", "m1")
	verdictMatches(t, eps, exitOK, "member", "add", "x1", "--peer-urls="+spare.PeerURL)
	verdictMatches(t, eps, exitOK, "member", "remove", "x1")
	verdictMatches(t, eps, exitOK, "member", "add", "l1", "--peer-urls="+learner.PeerURL, "--learner")
	verdictMatches(t, eps, exitLearnerLimit, "member", "add", "l2", "--peer-urls="+servertest.NewMember(t, "l2").PeerURL, "--learner")
	verdictMatches(t, eps, exitLearnerNotReady, "member", "promote", "l1")
	verdictMatches(t, eps, exitAlreadyExists, "member", "update", "m1", "--peer-urls="+ms[0].PeerURL)
	verdictMatches(t, eps, exitNotFound, "member", "remove", "00000000000000ff")

	learner.Start(t, learner.Config(servertest.InitialCluster(append(ms, learner)), "existing", nil))
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		stdout, stderr, code := runArgs("--endpoints="+eps, "member", "promote", "l1", "--dry-run")
		if code != exitOK {
			return fmt.Errorf("exit %d: %s%s", code, stdout, stderr)
		}
		return nil
	})
	if stdout, stderr, code := runArgs("--endpoints="+eps, "member", "promote", "l1"); code != exitOK {
		t.Fatalf("promote after an accepting dry run: exit %d: %s%s", code, stdout, stderr)
	}
	verdictMatches(t, eps, exitOK, "member", "update", "l1", "--peer-urls="+servertest.NewMember(t, "l1b").ClientURL)
}

func TestDryRunVerdictOneMemberStopped(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	if err := ms[2].Stop(); err != nil {
		t.Fatal(err)
	}
	eps := servertest.Endpoints(ms[:2])
	// Until the leader has gone an election timeout without hearing from the stopped member, it
	// still counts it as connected: wait until a dry run of an add says it does not.
	x0 := servertest.NewMember(t, "x0")
	servertest.Eventually(t, servertest.WaitTimeout, func() error {
		stdout, stderr, code := runArgs("--endpoints="+eps, "member", "add", "x0", "--peer-urls="+x0.PeerURL, "--dry-run")
		if code != exitQuorumProtection {
			return fmt.Errorf("exit %d: %s%s", code, stdout, stderr)
		}
		return nil
	})

	verdictMatches(t, eps, exitQuorumProtection, "member", "add", "x1", "--peer-urls="+servertest.NewMember(t, "x1").PeerURL)
	verdictMatches(t, eps, exitQuorumProtection, "member", "remove", "m1")
	verdictMatches(t, eps, exitQuorumProtection, "member", "update", "m1", "--peer-urls="+servertest.NewMember(t, "m1b").PeerURL)
	verdictMatches(t, eps, exitOK, "member", "add", "l1", "--peer-urls="+servertest.NewMember(t, "l1").PeerURL, "--learner")
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
