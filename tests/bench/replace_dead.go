package main

import (
	"context"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// deadReplaceRuns times the replacement of a dead member (a follower killed with SIGKILL just
// before) by a new one, end to end, run by run in turn with `clusterctl member replace` and with
// etcdctl's remove-add-promote steps on the same cluster, when etcdctl is built. Each replacement
// starts from three started voters and leaves three.
func (b *bench) deadReplaceRuns(ctx context.Context) (map[string]samples, []replaceResult, error) {
	return b.replaceSeries(ctx, b.opt.deadReplaceRuns, "dead", "replacement of a dead member", b.deadReplaceOnce)
}

// deadReplaceOnce kills a follower, untimed, and replaces it by a new member called name with the
// CLI key. The command line is given the live members' endpoints, as an operator would.
func (b *bench) deadReplaceOnce(ctx context.Context, key, name string) (replaceResult, error) {
	r := replaceResult{CLI: key, Name: name}
	if err := b.waitReady(ctx); err != nil {
		return r, err
	}
	ms, _, err := b.leaderFirst()
	if err != nil {
		return r, err
	}
	old := ms[len(ms)-1]
	r.Old = old.Name
	oldID, err := b.c.ID(10*time.Second, old.Name)
	if err != nil {
		return r, err
	}
	if err := b.c.Kill(old.Name); err != nil {
		return r, err
	}
	live := ms[:len(ms)-1]
	m, err := b.c.Alloc(name)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, replaceTimeout, fmt.Errorf("replacing the dead %s took longer than %v", old.Name, replaceTimeout))
	defer cancel()
	if key == "clusterctl" {
		steps := &stepClock{start: time.Now(), at: &r.StepsMS}
		err = b.replaceCommand(ctx, live, old.Name, m, true, steps)
		r.TotalMS = millis(time.Since(steps.start))
	} else {
		err = b.deadReplaceEtcdctl(ctx, live, oldID, m, &r)
	}
	return r, err
}

// deadReplaceEtcdctl runs etcd's runbook for a dead member as etcdctl commands: member remove,
// member add --learner, the new member started from the environment it prints, member promote
// again and again until it succeeds, endpoint health of the new member until it answers. The
// time runs from just before member remove until the new member answered.
func (b *bench) deadReplaceEtcdctl(ctx context.Context, live []*cluster.Member, oldID uint64, m *cluster.Member, r *replaceResult) error {
	eps := "--endpoints=" + cluster.Endpoints(live)
	start := time.Now()
	done := func(step int) { r.StepsMS[step-1] = millis(time.Since(start)) }
	if _, err := b.r.run(ctx, b.etcdctl, eps, "member", "remove", fmt.Sprintf("%x", oldID)); err != nil {
		return err
	}
	done(1)
	if _, err := b.addStartPromote(ctx, eps, m, r, func() { done(2) }); err != nil {
		return err
	}
	done(3)
	r.TotalMS = r.StepsMS[2]
	return nil
}

// fillDeadReplace adds the rows of the replacement of a dead member: clusterctl's, etcdctl's
// remove-add-promote steps on the same cluster, and their ratio, whose target is to be faster.
func (r *report) fillDeadReplace(s map[string]samples, warmup int) {
	r.fillVersus(s, warmup, versus{
		key: "member_replace_dead", figure: "clusterctl member replace of a dead follower, end to end (removed first; learner started from -w env)",
		etcdKey: "etcdctl_replace_dead", etcdFigure: "etcdctl remove, add --learner, start, promote until it succeeds, endpoint health of the new member until it answers (same cluster)",
		ratioFigure: "clusterctl member replace of a dead member / etcdctl's steps (medians)", target: "< 1x", met: func(x float64) bool { return x < 1 },
	})
}
