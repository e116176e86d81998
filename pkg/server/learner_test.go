package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/internal/testkit/servertest"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// startLearner adds a learner through c, starts it, and waits until it is ready to promote.
func startLearner(t *testing.T, ms []*servertest.Member, name string) (*servertest.Member, uint64) {
	t.Helper()
	n, added, initial := addMember(t, ms[0].Client(t), name, true)
	n.Start(t, n.Config(initial, "existing", nil))
	servertest.WaitMembers(t, n, len(added.Members), false)
	return n, added.Member.ID
}

func message(err error) string {
	if err == nil {
		return ""
	}
	return status.Convert(err).Message()
}

// Two clients promote the same learner at once: exactly one promotes it, the other is told it
// is a voter already.
func TestConcurrentPromote(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	_, id := startLearner(t, ms, "l")
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ms[i+1].Client(t)
			// Until the learner has caught up, both are told it is not in sync: retry that only.
			_ = servertest.Poll(10*time.Second, func() error {
				ctx, cancel := ctxWithName("")
				defer cancel()
				_, err := c.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
				results[i] = message(err)
				if results[i] == "etcdserver: can only promote a learner member which is in sync with leader" {
					return err
				}
				return nil
			})
		}()
	}
	wg.Wait()
	ok, voter := 0, 0
	for _, r := range results {
		switch r {
		case "":
			ok++
		case "etcdserver: can only promote a learner member":
			voter++
		default:
			t.Fatalf("unexpected answer %q", r)
		}
	}
	if ok != 1 || voter != 1 {
		t.Fatalf("want one promotion and one refusal, got %q", results)
	}
}

// A promote and a remove of the same learner race: whatever order they are applied in, the
// learner ends removed and every member agrees.
func TestPromoteRacesRemove(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	learner, id := startLearner(t, ms, "l")
	var wg sync.WaitGroup
	var promoteErr, removeErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		ctx, cancel := ctxWithName("")
		defer cancel()
		_, promoteErr = ms[1].Client(t).MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
	}()
	go func() {
		defer wg.Done()
		ctx, cancel := ctxWithName("")
		defer cancel()
		_, removeErr = ms[2].Client(t).MemberRemove(ctx, &pb.MemberRemoveRequest{ID: id})
	}()
	wg.Wait()
	if removeErr != nil {
		t.Fatalf("remove: %v", removeErr)
	}
	if m := message(promoteErr); m != "" && m != "etcdserver: member not found" && m != "etcdserver: can only promote a learner member which is in sync with leader" {
		t.Fatalf("promote: %v", promoteErr)
	}
	learner.Exited(t, 10*time.Second)
	for _, m := range ms {
		servertest.WaitMembers(t, m, 3, false)
	}
}

// A promote sent while leadership moves either happens or is refused with a clear error; it
// never hangs until its deadline, and all members agree on the outcome.
func TestPromoteDuringLeaderChange(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	_, id := startLearner(t, ms, "l")
	// Stopping the leader forces an election while the promote is in flight.
	leader, other, _ := leaderAndOther(t, ms)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := other.Client(t).MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id})
		done <- err
	}()
	if err := leader.Stop(); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if time.Since(start) > 9*time.Second {
		t.Fatalf("promote waited for its deadline: %v", err)
	}
	// A new leader has not heard from the learner yet, so "not in sync" is a fair answer too.
	// If the old leader had proposed the promote when it stopped, whether it committed is not
	// known to anyone who answers: "request timed out", and either outcome is right.
	// On a loaded machine the election may outlast the wait for a leader: "no leader", with
	// nothing proposed.
	want := map[string]bool{"": true, "etcdserver: unhealthy cluster": true, "etcdserver: no leader": true,
		"etcdserver: re-configuration failed due to not enough started members":      true,
		"etcdserver: can only promote a learner member which is in sync with leader": true,
		"etcdserver: request timed out":                                              true}
	if !want[message(err)] {
		t.Fatalf("promote during a leader change: %v", err)
	}
	unknown := message(err) == "etcdserver: request timed out"
	r, lerr := servertest.List(other.Client(t), true)
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, m := range r.Members {
		if m.ID == id && !unknown && m.IsLearner == (err == nil) {
			t.Fatalf("outcome %v but member is learner=%v", err, m.IsLearner)
		}
	}
}

// A member that joined but was stopped before its first snapshot arrived still reaches its
// peers after a restart (it keeps the peers it was shown at join time), and catches up.
func TestRestartBeforeFirstSnapshot(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	n, _, initial := addMember(t, ms[2].Client(t), "late", true)
	// The member it joins through must have applied the add before the others stop: the add is
	// answered once the leader applied it, and a follower learns of the commit a moment later.
	servertest.WaitMembers(t, ms[2], 4, false)
	// Without a quorum there is no leader to send the new member anything.
	for _, m := range ms[:2] {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	n.Start(t, n.Config(initial, "existing", nil))
	servertest.Eventually(t, 10*time.Second, func() error {
		// Joined: its data directory is written, its log still empty.
		if !storage.Exists(n.Dir) {
			return errors.New("not joined yet")
		}
		return nil
	})
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		m.Start(t, m.Config("x=http://127.0.0.1:1", "existing", nil))
	}
	// Restarted without any --initial-cluster of use: only what it stored can help it.
	n.Start(t, n.Config("x=http://127.0.0.1:1", "existing", nil))
	servertest.WaitMembers(t, n, 4, false)
}

// A joining member is ready (the linearizable read of WaitJoined answered, its publish applied)
// as soon as it has applied the snapshot it is sent. Its read must not be asked before then:
// raft drops the leader's answer from a member its configuration does not hold yet, and the read
// would wait out its retry, half an election timeout. Nor may its publication take the leader it
// has heard of, but whose address it does not know yet, for a silent one: that wait polls every
// fiftieth of an election timeout. The election timeout, 10 minutes here, makes either a wait of
// seconds. Every learner of several in turn, as the loss depended on whether the read or the
// snapshot came first.
func TestJoiningMemberReadyWithoutWaitingOutARead(t *testing.T) {
	ms := servertest.Start(t, 3, nil)
	c := ms[0].Client(t)
	for i := range 3 {
		n, added, initial := addMember(t, c, fmt.Sprintf("l%d", i), true)
		ready := make(chan struct{})
		n.Start(t, n.Config(initial, "existing", func(cfg *server.Config) {
			cfg.ElectionTimeout = 10 * time.Minute
			cfg.OnReady = func() { close(ready) }
		}))
		select {
		case <-ready:
		case <-time.After(4 * time.Second):
			t.Fatalf("learner %d not ready within 4s: its read waited for the retry", i)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: added.Member.ID})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Exited(t, 10*time.Second); !errors.Is(err, server.ErrRemoved) {
			t.Fatalf("learner %d removed: %v", i, err)
		}
	}
}
