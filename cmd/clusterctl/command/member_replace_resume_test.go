package command

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// A run that removed a dead old member and stopped before the add leaves nothing in the
// membership that remembers the old member; clusterd's history does, and the same command line
// goes on with the add, with --dry-run too. A removal by a finished replacement (the last step of
// the live order) and one followed by an add are not gone on from: 10, nothing added. The old
// members here are learners that never started, removed as the stopped runs removed them.
func TestReplaceGoesOnAfterRemovingADeadMember(t *testing.T) {
	ms := servertest.Start(t, 1, nil)
	waitStarted(t, ms)
	eps := "--endpoints=" + servertest.Endpoints(ms)
	c := clientOf(t, ms[0])
	// removedBy adds a learner called name and removes it marked via.
	removedBy := func(name, via string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		added, err := c.MemberAdd(ctx, name, []string{servertest.NewMember(t, name).PeerURL}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.MemberRemove(client.WithVia(ctx, via), added.ID); err != nil {
			t.Fatal(err)
		}
	}
	members := func() int { return len(listOf(t, ms)) }

	removedBy("done", wire.ViaMemberReplace)
	_, stderr, code := runArgs(eps, "member", "replace", "done", "r9", "--peer-urls=http://127.0.0.1:1")
	if code != exitNotFound || stderr != "Error: member not found: no member with ID or name \"done\"\n" || members() != 1 {
		t.Fatalf("replace of a member a finished replacement removed: exit %d, %d members\n%s", code, members(), stderr)
	}

	removedBy("dead", wire.ViaMemberReplaceRemoveFirst)
	r1 := servertest.NewMember(t, "r1")
	stdout, stderr, code := runArgs(eps, "member", "replace", "dead", "r1", "--peer-urls="+r1.PeerURL, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "\n1. remove dead ") || !strings.Contains(stdout, " done already\n2. add r1 as learner ") ||
		!strings.HasSuffix(stdout, "\nwould be accepted\n") || members() != 1 {
		t.Fatalf("dry run of the replacement gone on from: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = runArgs(eps, "member", "replace", "dead", "r1", "--peer-urls="+r1.PeerURL, "--wait-timeout=1s")
	if code != exitLearnerNotReady || !strings.Contains(stderr, " was removed first by member replace at raft index ") ||
		!strings.Contains(stderr, "\nstep 1 of 3: dead is gone already: removal skipped\nstep 2 of 3: added r1 ") {
		t.Fatalf("replace run again: exit %d, want %d (r1 added, not started)\n%s", code, exitLearnerNotReady, stderr)
	}
	if !slices.ContainsFunc(listOf(t, ms), func(m client.Member) bool { return m.IsLearner && slices.Equal(m.PeerURLs, []string{r1.PeerURL}) }) {
		t.Errorf("r1 is not a learner of the cluster: %+v", listOf(t, ms))
	}

	// r1's add follows the removal now: replacing the same member under another name is no
	// run to go on from.
	_, stderr, code = runArgs(eps, "member", "replace", "dead", "r2", "--peer-urls=http://127.0.0.1:2")
	if code != exitNotFound || members() != 2 {
		t.Errorf("replace under another name after the add: exit %d, %d members, want %d, 2\n%s", code, members(), exitNotFound, stderr)
	}
	// A member never there is not found.
	if _, stderr, code := runArgs(eps, "member", "replace", "nosuch", "r3", "--peer-urls=http://127.0.0.1:3"); code != exitNotFound {
		t.Errorf("replace of a member never there: exit %d, want %d\n%s", code, exitNotFound, stderr)
	}
}

// The decision reads the history back to the removal, however many changes came since, and a
// history that dropped the removal (--max-history) is no run to go on from. The old member is a
// learner that never started; the changes after its removal are a learner's peer URL updates,
// which add no member.
func TestReplaceResumeReadsTheHistoryBack(t *testing.T) {
	for _, tt := range []struct {
		name       string
		maxHistory int
		addAfter   bool
		want       int
	}{
		{"40 changes since", 0, false, exitOK},
		{"an add, then 40 changes", 0, true, exitNotFound},
		{"the removal dropped", 8, false, exitNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ms := servertest.Start(t, 1, func(c *server.Config) { c.MaxLearners, c.MaxHistory = 3, tt.maxHistory })
			waitStarted(t, ms)
			c := clientOf(t, ms[0])
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			add := func(name string) uint64 {
				t.Helper()
				added, err := c.MemberAdd(ctx, name, []string{servertest.NewMember(t, name).PeerURL}, true)
				if err != nil {
					t.Fatal(err)
				}
				return added.ID
			}
			u := add("u")
			dead := add("dead")
			if _, err := c.MemberRemove(client.WithVia(ctx, wire.ViaMemberReplaceRemoveFirst), dead); err != nil {
				t.Fatal(err)
			}
			if tt.addAfter {
				add("x")
			}
			for i := range 40 {
				if _, err := c.MemberUpdate(ctx, u, []string{fmt.Sprintf("http://127.0.0.1:%d", 1+i%2)}); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := runArgs("--endpoints="+ms[0].ClientAddr(), "member", "replace", "dead", "r1", "--peer-urls=http://127.0.0.1:3", "--dry-run")
			if code != tt.want || (code == exitOK) != strings.Contains(stdout, "\n1. remove dead ") {
				t.Errorf("replace --dry-run: exit %d, want %d\n%s%s", code, tt.want, stdout, stderr)
			}
		})
	}
}

// clientOf is a client of m alone, closed when the test ends.
func clientOf(t *testing.T, m *servertest.Member) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: []string{m.ClientAddr()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
