package command

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"github.com/clusterctl/clusterctl/pkg/server"
)

// listOf is the linearizable member list of the cluster of ms.
func listOf(t *testing.T, ms []*servertest.Member) []client.Member {
	t.Helper()
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.ClientAddr())
	}
	c, err := client.New(client.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.MemberList(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	return list.Members
}

// leaderName is the name of the member that leads, as a linearizable member list says.
func leaderName(t *testing.T, ms []*servertest.Member) string {
	t.Helper()
	for _, m := range listOf(t, ms) {
		if m.IsLeader {
			return m.Name
		}
	}
	t.Fatal("no member leads")
	return ""
}

// waitStarted waits until every member of the cluster of ms is listed as started.
func waitStarted(t *testing.T, ms []*servertest.Member) {
	t.Helper()
	err := servertest.Poll(servertest.WaitTimeout, func() error {
		for _, m := range listOf(t, ms) {
			if !m.Started {
				return fmt.Errorf("%s has not started", m.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A new member that does not start is waited for by clusterd's leader, the progress lines
// coming at most one per promoteRetryInterval; the command gives up at --wait-timeout with the
// server's refusal, leadership still with the member replaced (the leader). A run again once the
// new member runs moves leadership to it and finishes the replacement.
func TestReplaceWaitsForLearner(t *testing.T) {
	ms := servertest.Start(t, 3, steadyLeader)
	eps := "--endpoints=" + servertest.Endpoints(ms)
	r1 := servertest.NewMember(t, "r1")
	waitStarted(t, ms)
	old := leaderName(t, ms)

	start := time.Now()
	_, stderr, code := runArgs(eps, "member", "replace", old, "r1", "--peer-urls="+r1.PeerURL, "--wait-timeout=3s", "-w", "env")
	took := time.Since(start)
	if code != exitLearnerNotReady {
		t.Fatalf("replace with the learner not started: exit %d, want %d\n%s", code, exitLearnerNotReady, stderr)
	}
	if !strings.Contains(stderr, "step 1 of 4: added r1") || strings.Contains(stderr, "step 2") {
		t.Errorf("stderr:\n%s", stderr)
	}
	lines := strings.Count(stderr, "r1 not started yet: waiting for its process\n")
	// At most one per promoteRetryInterval of the wait, the first after the first attempt.
	if maxLines := int(took / promoteRetryInterval); lines < 1 || lines > maxLines {
		t.Errorf("%d progress lines in %v, want 1 to %d:\n%s", lines, took, maxLines, stderr)
	}
	if got := leaderName(t, ms); got != old {
		t.Errorf("%s leads while r1 has not started, want %s still", got, old)
	}

	r1.Start(t, r1.Config(servertest.InitialCluster(append(ms, r1)), "existing", nil))
	_, stderr, code = runArgs(eps, "member", "replace", old, "r1", "--peer-urls="+r1.PeerURL, "--wait-timeout=30s", "-w", "env")
	if code != exitOK {
		t.Fatalf("replace run again with the learner started: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"step 1 of 4: r1 ", "step 2 of 4: promoted r1 ",
		"step 3 of 4: moved leadership from " + old + " to r1 (", "step 4 of 4: removed " + old + " "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// replaceLeader replaces the leader of the cluster of ms (running: those that run) by a new
// member r1, added as a learner and started before the command, which goes on from there, and
// returns the command's stderr and the members left running. The leader is the command's first
// endpoint, as it is of an operator who asked it first whether it leads.
func replaceLeader(t *testing.T, ms, running []*servertest.Member, flags ...string) (old, stderr string, rest []*servertest.Member) {
	t.Helper()
	waitStarted(t, running)
	old = leaderName(t, running)
	r1 := servertest.NewMember(t, "r1")
	var leaderFirst []*servertest.Member
	for _, m := range running {
		if m.Name == old {
			leaderFirst = append([]*servertest.Member{m}, leaderFirst...)
		} else {
			leaderFirst = append(leaderFirst, m)
		}
	}
	eps := "--endpoints=" + servertest.Endpoints(leaderFirst)
	if _, errOut, code := runArgs(eps, "member", "add", "r1", "--peer-urls="+r1.PeerURL, "--learner"); code != exitOK {
		t.Fatalf("member add: exit %d\n%s", code, errOut)
	}
	r1.Start(t, r1.Config(servertest.InitialCluster(append(ms, r1)), "existing", nil))
	_, stderr, code := runArgs(append([]string{eps, "member", "replace", old, "r1", "--peer-urls=" + r1.PeerURL, "--wait-timeout=30s", "-w", "env"}, flags...)...)
	if code != exitOK {
		t.Fatalf("replace: exit %d\n%s", code, stderr)
	}
	for _, m := range append(running, r1) {
		if m.Name != old {
			rest = append(rest, m)
		}
	}
	return old, stderr, rest
}

// steadyLeader gives members an election timeout of a second: a leader that a busy machine
// leaves without a turn for the test kit's 200 ms would lose its leadership mid-replacement, and
// these tests follow where leadership goes.
func steadyLeader(c *server.Config) { c.ElectionTimeout = time.Second }

// Leadership goes to the new member once it is promoted, with other voters up or none.
func TestReplaceMovesLeadershipToTheNewMember(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n, " voters"), func(t *testing.T) {
			ms := servertest.Start(t, n, steadyLeader)
			old, stderr, rest := replaceLeader(t, ms, ms)
			if got := leaderName(t, rest); got != "r1" || !strings.Contains(stderr, "step 3 of 4: moved leadership from "+old+" to r1 (") {
				t.Errorf("%s leads; stderr:\n%s", got, stderr)
			}
		})
	}
}

// TestUntilHealthy: a change refused as unhealthy (etcd's window after a start or an election)
// is sent again until accepted, with one line on stderr; any other answer ends it at once.
func TestUntilHealthy(t *testing.T) {
	g := globals(t, printer.Simple)
	var stderr strings.Builder
	g.Err = &stderr
	calls := 0
	err := g.untilHealthy(context.Background(), "the removal of infra1", func(context.Context) error {
		calls++
		if calls < 3 {
			return rpcerr.ErrUnhealthyCluster
		}
		return nil
	})
	want := "the removal of infra1 refused: etcdserver: unhealthy cluster (etcd refuses changes for 5s after a member starts or a leader is elected): asking again for up to 10s\n"
	if err != nil || calls != 3 || stderr.String() != want {
		t.Errorf("untilHealthy: %v after %d calls, stderr %q; want nil after 3 and %q", err, calls, stderr.String(), want)
	}
	calls = 0
	err = g.untilHealthy(context.Background(), "the add of infra3", func(context.Context) error {
		calls++
		return rpcerr.ErrNotEnoughStartedMembers
	})
	if !errors.Is(err, rpcerr.ErrNotEnoughStartedMembers) || calls != 1 {
		t.Errorf("untilHealthy of another refusal: %v after %d calls; want it at once", err, calls)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1204: "1,204", 5000000: "5,000,000", 123456789: "123,456,789"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
