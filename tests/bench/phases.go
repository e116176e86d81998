package main

import (
	"context"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// measure runs every measurement in an order that needs no member to be restarted: the figures
// that want a fresh, quiet cluster first, then the TLS phase (a second cluster, started beside
// the first while both are fresh and stopped again before the next figure), then the log is filled, then each cycle adds a
// learner (learner ready) and removes the leader (leader removal), which leaves three voters
// again for the next cycle; last come conf changes after a long history of removals, and the
// profiles.
func (b *bench) measure(ctx context.Context) error {
	if b.opt.only == onlyHistory {
		h, err := b.historyPhase(ctx)
		if err != nil {
			return err
		}
		b.rep.fillHistory(h)
		b.rep.Machine.LoadAfter = loadavg()
		return nil
	}
	b.logf("starting 3 members in %s", b.dir)
	if _, err := b.c.Bootstrap(3, nil); err != nil {
		return err
	}
	if err := b.waitReady(ctx); err != nil {
		return err
	}
	boot := b.c.Running()
	eps := cluster.Endpoints(boot)
	if b.opt.only == onlyClusterStatus {
		b.logf("cluster status: %d rounds (+%d warm-up)", b.opt.statusRuns, b.opt.warmup)
		st, err := b.clusterStatusRuns(ctx, boot)
		if err != nil {
			return err
		}
		b.rep.fillClusterStatus(st)
		b.rep.Machine.LoadAfter = loadavg()
		return nil
	}
	if b.opt.only == onlyReplace {
		return b.replacePhase(ctx)
	}

	// Idle memory: the fsync floor runs in this process during the idle time, which the members
	// do not see; they only exchange heartbeats.
	idleFrom := time.Now()
	b.logf("fsync floor, then %v idle", b.opt.idle)
	fsync, err := b.fsyncFloor(ctx)
	if err != nil {
		return err
	}
	commits, err := b.boltFloor(ctx)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, time.Until(idleFrom.Add(b.opt.idle))); err != nil {
		return err
	}
	var rss samples
	for _, m := range boot {
		v, err := vmRSS(m.Pid())
		if err != nil {
			return err
		}
		rss = append(rss, v)
	}

	b.logf("member list: %d runs (+%d warm-up) per program", b.opt.listRuns, b.opt.warmup)
	// Each program asks one member, as the floor does; with several endpoints clusterctl also
	// asks each for its status (the split check), measured apart as "clusterctl_each".
	one := "--endpoints=" + boot[0].ClientAddr
	tools := []tool{
		{key: "clusterctl", path: b.clusterctl, args: []string{one, "member", "list"}, lines: 3},
		{key: "clusterctl_each", path: b.clusterctl, args: []string{"--endpoints=" + eps, "member", "list"}, lines: 3},
		{key: "floor", path: b.floor, args: []string{boot[0].ClientAddr}},
		{key: "gostart", path: b.gostart},
	}
	clis := map[string]string{"clusterctl": b.clusterctl}
	if b.etcdctl != "" {
		tools = append(tools, tool{key: "etcdctl", path: b.etcdctl, args: []string{one, "member", "list"}, lines: 3})
		clis["etcdctl"] = b.etcdctl
	}
	lists, err := b.listRuns(ctx, tools)
	if err != nil {
		return err
	}
	b.logf("endpoint status --cluster: %d runs (+%d warm-up) per CLI", b.opt.listRuns, b.opt.warmup)
	statuses, err := b.endpointStatusRuns(ctx, boot[0].ClientAddr)
	if err != nil {
		return err
	}
	b.logf("cluster status: %d rounds (+%d warm-up)", b.opt.statusRuns, b.opt.warmup)
	clusterStat, err := b.clusterStatusRuns(ctx, boot)
	if err != nil {
		return err
	}
	b.logf("member list peak RSS: %d runs (+%d warm-up) per program", b.opt.rssRuns, b.opt.warmup)
	peaks, err := b.peakRuns(ctx, tools)
	if err != nil {
		return err
	}
	b.logf("member list package initialisation: %d runs (+%d warm-up) per program", b.opt.rssRuns, b.opt.warmup)
	inits, err := b.initRuns(ctx, tools)
	if err != nil {
		return err
	}

	var tlsf *tlsFigures
	if b.opt.tls {
		if tlsf, err = b.tlsPhase(ctx, boot); err != nil {
			return err
		}
	}

	b.logf("member add --learner + member remove: %d pairs (+%d warm-up) per CLI", b.opt.changeRuns, b.opt.warmup)
	pairs, err := b.addRemoveRuns(ctx, clis, eps)
	if err != nil {
		return err
	}

	b.logf("conf changes in process: %d pairs (+%d warm-up)", b.opt.confRuns, b.opt.warmup)
	conf, err := b.confChangeRuns(ctx)
	if err != nil {
		return err
	}
	b.logf("peer URL checks: %d runs (+%d warm-up) of each", b.opt.urlRuns, b.opt.warmup)
	urls, err := b.urlRuns(ctx)
	if err != nil {
		return err
	}

	// Replacements and the clientv3 removals change every member in turn: after the series that
	// use the boot members' endpoints, and before the log is filled, so new members catch up
	// with a short log.
	replaces, replacements, deadReplaces, deadReplacements, err := b.replaceBoth(ctx)
	if err != nil {
		return err
	}
	b.logf("leader removals seen by clientv3: %d (+%d warm-up)", b.opt.removals, b.opt.cycleWarmup())
	v3, err := b.v3Removals(ctx, b.c, b.opt.removals)
	if err != nil {
		return err
	}
	var etcdV3 []removalResult
	if b.opt.etcdRemovals > 0 {
		if b.etcdBin == "" {
			b.rep.note("etcd 3.7.1 is not built: no leader removals on real etcd (-etcd-removals)")
		} else {
			b.logf("leader removals seen by clientv3 on real etcd: %d (+%d warm-up)", b.opt.etcdRemovals, b.opt.cycleWarmup())
			if etcdV3, err = b.etcdRemovals(ctx); err != nil {
				return fmt.Errorf("real etcd: %w", err)
			}
		}
	}

	b.logf("filling the log to %d entries", b.opt.entries)
	fill, err := b.fillLog(ctx)
	if err != nil {
		return err
	}
	b.logf("filled: %d changes in %.1fs, raft index %d", fill.Changes, fill.Seconds, fill.RaftIndex)

	var ready samples
	var learners []learnerResult
	var gaps samples
	var removals []removalResult
	warm := b.opt.cycleWarmup()
	for k := range warm + b.opt.cycles {
		if k < warm {
			b.logf("warm-up cycle %d/%d: learner ready, leader removal (not counted)", k+1, warm)
		} else {
			b.logf("cycle %d/%d: learner ready, leader removal", k-warm+1, b.opt.cycles)
		}
		v, err := b.learnerReady(ctx, fmt.Sprintf("learner%d", k))
		if err != nil {
			return err
		}
		rr, err := b.leaderRemoval(ctx)
		if err != nil {
			return err
		}
		if k < warm {
			b.logf("warm-up cycle: learner ready %.1f ms, leader removal gap %.1f ms", v.ReadyMS, rr.LongestGapMS)
			continue
		}
		ready = append(ready, v.ReadyMS)
		learners = append(learners, v)
		removals = append(removals, rr)
		gaps = append(gaps, rr.LongestGapMS)
	}

	var etcdReady samples
	if b.etcdBin != "" {
		b.logf("learner ready on real etcd 3.7.1: %d puts, then %d cycles (+%d warm-up)", b.opt.entries, b.opt.cycles, warm)
		if etcdReady, err = b.etcdLearnerReady(ctx); err != nil {
			return fmt.Errorf("real etcd: %w", err)
		}
	}

	// Last, since they leave thousands of removed IDs behind, which the figures above are not
	// measured with.
	b.logf("%d learners added and removed, then conf changes again", b.opt.history)
	if _, err := b.addRemoveLoop(ctx, viaLeader, b.opt.history, time.Time{}); err != nil {
		return err
	}
	confLong, err := b.confChangeRuns(ctx)
	if err != nil {
		return err
	}
	var history *historyFigures
	if b.opt.historyEntries > 0 {
		if history, err = b.historyPhase(ctx); err != nil {
			return err
		}
	}
	if b.opt.profile != "" {
		b.logf("profiling conf changes for %v into %s", b.opt.profileFor, b.opt.profile)
		if err := b.profileConfChanges(ctx); err != nil {
			return err
		}
	}

	b.rep.fill(figures{
		lists: lists, statuses: statuses, clusterStat: clusterStat, peaks: peaks, inits: inits, pairs: pairs, conf: conf, confLong: confLong, urls: urls, fsync: fsync, bolt: commits, rss: rss,
		ready: ready, etcdReady: etcdReady, learners: learners, gaps: gaps, removals: removals, replaces: replaces, replacements: replacements, deadReplaces: deadReplaces, deadReplacements: deadReplacements, v3: v3, etcdV3: etcdV3, fill: fill, tls: tlsf, history: history,
	})
	return nil
}

// replaceBoth runs the replacements of the leader and then those of a dead follower.
func (b *bench) replaceBoth(ctx context.Context) (replaces map[string]samples, replacements []replaceResult, deadReplaces map[string]samples, deadReplacements []replaceResult, err error) {
	b.logf("member replace of the leader: %d runs (+%d warm-up) per CLI", b.opt.replaceRuns, b.opt.cycleWarmup())
	if replaces, replacements, err = b.replaceRuns(ctx); err != nil {
		return
	}
	b.logf("member replace of a dead follower: %d runs (+%d warm-up) per CLI", b.opt.deadReplaceRuns, b.opt.cycleWarmup())
	deadReplaces, deadReplacements, err = b.deadReplaceRuns(ctx)
	return
}

// replacePhase is -only=replace: the two replacement series on the freshly started cluster,
// their rows alone.
func (b *bench) replacePhase(ctx context.Context) error {
	replaces, replacements, deadReplaces, deadReplacements, err := b.replaceBoth(ctx)
	if err != nil {
		return err
	}
	cw := b.opt.cycleWarmup()
	b.rep.fillReplace(replaces, cw)
	b.rep.Replacements = replacements
	b.rep.fillDeadReplace(deadReplaces, cw)
	b.rep.DeadReplacements = deadReplacements
	b.rep.Machine.LoadAfter = loadavg()
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
