package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
)

// etcdLearnerReady is learner ready on a real etcd 3.7.1 cluster of three, after -entries puts of
// 100 bytes: the steps of clusterd's cycles (learnerReadyIn), so that clusterd's figure is held
// to etcd's measured in the same run. Each learner, promoted, is removed again, so every cycle
// starts from three voters.
func (b *bench) etcdLearnerReady(ctx context.Context) (samples, error) {
	dir := filepath.Join(b.dir, "etcd-learners")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := cluster.New(cluster.Config{
		Server: b.etcdBin, Dir: dir, Token: "bench-etcd-learners", Context: ctx,
		Env:  []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")},
		Args: []string{"--log-level=" + b.opt.logLevel},
	})
	defer func() {
		if err := c.StopAll(5 * time.Second); err != nil {
			b.logf("stopping the etcd members: %v", err)
		}
	}()
	if _, err := c.Bootstrap(3, nil); err != nil {
		return nil, err
	}
	var eps []string
	for _, m := range c.Running() {
		eps = append(eps, m.ClientURL())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	val := strings.Repeat("x", 100)
	for i := range b.opt.entries {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%05d", i), val); err != nil {
			return nil, fmt.Errorf("put %d: %w", i, err)
		}
	}
	var out samples
	warm := b.opt.cycleWarmup()
	for k := range warm + b.opt.cycles {
		name := fmt.Sprintf("elearner%d", k)
		r, err := b.learnerReadyIn(ctx, c, name)
		if err != nil {
			return nil, err
		}
		if k >= warm {
			out = append(out, r.ReadyMS)
		}
		if _, err := b.r.run(ctx, b.clusterctl, "--endpoints="+strings.Join(eps, ","), "member", "remove", name); err != nil {
			return nil, fmt.Errorf("removing %s: %w", name, err)
		}
		if _, err := c.WaitExit(name, 10*time.Second); err != nil {
			b.logf("the removed etcd learner %s: %v", name, err)
		}
	}
	return out, nil
}
