package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/clusterctl/clusterctl/internal/testkit/cluster"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/pkg/client"
)

// newCluster returns the bench's cluster of clusterd processes, started through the harness the
// end-to-end tests use: every member gets the bench's --snapshot-count and --log-level and, with
// -profile, serves its profiles; waits end when ctx does (SIGINT, -timeout).
func (b *bench) newCluster(ctx context.Context) *cluster.Cluster {
	return cluster.New(cluster.Config{
		Server:  b.clusterd,
		Dir:     b.dir,
		Env:     []string{"PATH=" + os.Getenv("PATH")},
		Token:   "bench",
		Profile: b.opt.profile != "",
		Context: ctx,
		Args: []string{
			fmt.Sprintf("--snapshot-count=%d", b.opt.snapshotCount),
			"--log-level=" + b.opt.logLevel,
		},
	})
}

// newClient returns a pkg/client for the given members, in that order.
func newClient(ms []*cluster.Member) (*client.Client, error) { return newTLSClient(ms, nil) }

// newTLSClient returns a pkg/client for the given members, in that order, over TLS with cfg
// (plain when cfg is nil).
func newTLSClient(ms []*cluster.Member, cfg *tls.Config) (*client.Client, error) {
	eps := make([]string, len(ms))
	for i, m := range ms {
		eps[i] = m.ClientAddr
	}
	return client.New(client.Config{Endpoints: eps, DialTimeout: 2 * time.Second, TLS: cfg})
}

// leaderFirst returns the running members with the leader first, so an in-process request goes
// straight to the member that decides it and the figure holds no forwarding hop, and the
// leader's ID.
func (b *bench) leaderFirst() ([]*cluster.Member, uint64, error) { return leaderFirstOf(b.c) }

// leaderFirstOf is leaderFirst for any of the bench's clusters.
func leaderFirstOf(c *cluster.Cluster) ([]*cluster.Member, uint64, error) {
	leader, id, err := c.WaitLeader(10 * time.Second)
	if err != nil {
		return nil, 0, err
	}
	ms := []*cluster.Member{leader}
	for _, m := range c.Running() {
		if m != leader {
			ms = append(ms, m)
		}
	}
	return ms, id, nil
}

// waitReady waits for a leader and until every member answers a linearizable member list in
// which every member has started.
func (b *bench) waitReady(ctx context.Context) error { return waitReadyOf(ctx, b.c, nil) }

// waitReadyOf is waitReady for any of the bench's clusters, reached over TLS with cfg (plain
// when nil).
func waitReadyOf(ctx context.Context, c *cluster.Cluster, cfg *tls.Config) error {
	if _, _, err := c.WaitLeader(20 * time.Second); err != nil {
		return err
	}
	for _, m := range c.Running() {
		cl, err := newTLSClient([]*cluster.Member{m}, cfg)
		if err != nil {
			return err
		}
		err = proc.PollContext(ctx, 10*time.Second, "wait for "+m.Name+" to serve member list", func() (bool, error) {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			r, err := cl.MemberList(cctx, true)
			if err != nil {
				return false, err
			}
			for _, x := range r.Members {
				if !x.Started {
					return false, fmt.Errorf("%s is not started yet", x.Name)
				}
			}
			return true, nil
		})
		cl.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
