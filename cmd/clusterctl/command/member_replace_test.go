package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/server/servertest"
)

func TestReplaceRetryAfter(t *testing.T) {
	var fast time.Duration
	for attempt := range replaceFastAttempts {
		if got := replaceRetryAfter(attempt); got != replaceRetry {
			t.Fatalf("attempt %d: wait %v, want %v", attempt, got, replaceRetry)
		}
		fast += replaceRetryAfter(attempt)
	}
	// The fast attempts cover the start of a learner with little to catch up, and no more.
	if fast < 100*time.Millisecond || fast > 500*time.Millisecond {
		t.Errorf("the fast attempts wait %v in all", fast)
	}
	prev := replaceRetry
	for attempt := replaceFastAttempts; attempt < replaceFastAttempts+100; attempt++ {
		got := replaceRetryAfter(attempt)
		if got < prev || got > promoteRetryInterval || (got != 2*prev && got != promoteRetryInterval) {
			t.Fatalf("attempt %d: wait %v after %v: want it doubled, up to %v", attempt, got, prev, promoteRetryInterval)
		}
		prev = got
	}
	if prev != promoteRetryInterval {
		t.Errorf("the wait ends at %v, want %v", prev, promoteRetryInterval)
	}
}

// leaderName is the name of the member that leads, as a linearizable member list says.
func leaderName(t *testing.T, ms []*servertest.Member) string {
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
	for _, m := range list.Members {
		if m.IsLeader {
			return m.Name
		}
	}
	t.Fatal("no member leads")
	return ""
}

// A new member that does not start is asked about every few milliseconds, but the progress
// lines come at most one per promoteRetryInterval; the command gives up at --wait-timeout with
// the server's refusal, and a run again once the member runs finishes the replacement, moving
// leadership to the new member (the leader is the member replaced).
func TestReplaceWaitsForLearner(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	eps := "--endpoints=" + servertest.Endpoints(ms)
	r1 := servertest.NewMember(t, "r1")
	old := leaderName(t, ms)

	start := time.Now()
	_, stderr, code := runArgs(eps, "member", "replace", old, "r1", "--peer-urls="+r1.PeerURL, "--wait-timeout=1s", "-w", "env")
	took := time.Since(start)
	if code != exitLearnerNotReady {
		t.Fatalf("replace with the learner not started: exit %d, want %d\n%s", code, exitLearnerNotReady, stderr)
	}
	if !strings.Contains(stderr, "step 1 of 4: added r1") || strings.Contains(stderr, "step 2") {
		t.Errorf("stderr:\n%s", stderr)
	}
	lines := strings.Count(stderr, " not in sync yet: ")
	// One before the first wait, then at most one per promoteRetryInterval of the 1 s.
	if maxLines := 1 + int(took/promoteRetryInterval); lines < 1 || lines > maxLines {
		t.Errorf("%d progress lines in %v, want 1 to %d:\n%s", lines, took, maxLines, stderr)
	}

	r1.Start(t, r1.Config(servertest.InitialCluster(append(ms, r1)), "existing", nil))
	_, stderr, code = runArgs(eps, "member", "replace", old, "r1", "--peer-urls="+r1.PeerURL, "--wait-timeout=30s", "-w", "env")
	if code != exitOK {
		t.Fatalf("replace run again with the learner started: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"step 1 of 4: r1 ", "step 2 of 4: promoted r1 ",
		"step 3 of 4: moved leadership from " + old + " to r1 ", "step 4 of 4: removed " + old + " "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var rest []*servertest.Member
	for _, m := range append(ms, r1) {
		if m.Name != old {
			rest = append(rest, m)
		}
	}
	if got := leaderName(t, rest); got != "r1" {
		t.Errorf("%s leads after the replacement, want r1", got)
	}
}
