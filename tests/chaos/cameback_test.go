package chaos

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// fakeStatus answers Status as a member with a given ID and applied index.
type fakeStatus struct {
	pb.UnimplementedMaintenanceServer
	id, applied uint64
}

func (f *fakeStatus) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: &pb.ResponseHeader{MemberId: f.id}, RaftAppliedIndex: f.applied}, nil
}

// The came-back check must fail a restarted member that stays silent with nothing to excuse it,
// excuse (and count) the silences other faults and clients cause, and compare what a member
// that answers says, all without clusterd: a sleep process stands for a member that never
// answers, a fake Maintenance server for one that does.
func TestCameBackCheck(t *testing.T) {
	dir := t.TempDir()
	events, err := newJournal(filepath.Join(dir, "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer events.close()
	const id = 7
	// newCase is a cluster of one member slot, held by no fault, and a silent process for it.
	newCase := func(t *testing.T) (*cluster, comeback) {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		c := &cluster{cfg: settings{cameBackWithin: time.Second}, stats: map[string]int{}, cameBack: map[string]int{},
			events: events, logf: t.Logf, slots: []*slot{{idx: 0, client: port, state: slotMember, id: id}}}
		p, err := startProcess(events, "/bin/sleep", filepath.Join(t.TempDir(), "m0.log"), 0, "m0", "restart", []string{"60"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.resume(); p.kill() })
		c.slots[0].proc = p
		return c, comeback{idx: 0, id: id, proc: p, applied: 5, baseline: true}
	}
	// answer serves Status on the slot's client port as fakeStatus f.
	answer := func(t *testing.T, c *cluster, f *fakeStatus) {
		l, err := net.Listen("tcp", c.clientAddr(0))
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		pb.RegisterMaintenanceServer(srv, f)
		go srv.Serve(l)
		t.Cleanup(srv.Stop)
	}
	only := func(t *testing.T, c *cluster, outcome string, failures int) {
		t.Helper()
		if len(c.cameBack) != 1 || c.cameBack[outcome] != 1 {
			t.Errorf("outcomes %v, want only %q", c.cameBack, outcome)
		}
		if len(c.failures) != failures {
			t.Errorf("failures %q, want %d", c.failures, failures)
		}
	}

	t.Run("silent", func(t *testing.T) {
		c, cb := newCase(t)
		c.checkCameBack(context.Background(), cb, time.Now())
		only(t, c, "FAILED: no Status answer", 1)
	})
	t.Run("cut short by the end of the run, then silent", func(t *testing.T) {
		c, cb := newCase(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if c.checkCameBack(ctx, cb, time.Now()) {
			t.Fatal("a check whose context ended reports a verdict")
		}
		c.deferCameBack(cb)
		c.checkDeferred()
		only(t, c, "FAILED: no Status answer", 1)
		if c.cameBackAfterRun != 1 {
			t.Errorf("%d checks made after the run, want 1", c.cameBackAfterRun)
		}
	})
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, c *cluster, cb *comeback)
		outcome  string
		failures int
	}{
		{"paused", func(_ *testing.T, _ *cluster, cb *comeback) { cb.proc.pause() },
			"skipped: paused by another fault since its restart", 0},
		{"removed", func(_ *testing.T, c *cluster, _ *comeback) { c.slots[0].state = slotRemoved },
			"skipped: removed from the membership since its restart", 0},
		{"killed again", func(_ *testing.T, _ *cluster, cb *comeback) { cb.proc.kill() },
			"skipped: killed again by another fault", 0},
		{"came back", func(t *testing.T, c *cluster, _ *comeback) { answer(t, c, &fakeStatus{id: id, applied: 5}) },
			"checked: same ID, applied index not behind", 0},
		{"came back, no baseline", func(t *testing.T, c *cluster, cb *comeback) {
			answer(t, c, &fakeStatus{id: id, applied: 1})
			cb.applied, cb.baseline = 0, false
		}, "checked: same ID (no applied index before the kill: Status failed then)", 0},
		{"came back behind", func(t *testing.T, c *cluster, _ *comeback) { answer(t, c, &fakeStatus{id: id, applied: 4}) },
			"FAILED: applied index behind", 1},
		{"came back as another member", func(t *testing.T, c *cluster, _ *comeback) { answer(t, c, &fakeStatus{id: id + 1, applied: 5}) },
			"FAILED: another member ID", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cb := newCase(t)
			tc.setup(t, c, &cb)
			c.checkCameBack(context.Background(), cb, time.Now())
			only(t, c, tc.outcome, tc.failures)
		})
	}
}
