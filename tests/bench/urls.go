package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
)

// urlFigures are what the peer URL checks cost the leader (docs/benchmarks.md, "Decisions the code cites").
type urlFigures struct {
	oneURL  samples // a learner's peer URL update, one URL for another
	maxURLs samples // the same with membership.MaxURLs URLs for as many others
	dryRun  samples // a dry-run add of dryRunURLs URLs beside the learner of MaxURLs URLs
}

// dryRunURLs is the size of the add that once took seconds to check against a learner as large.
const dryRunURLs = 3000

// urlRuns measures, through pkg/client to the leader: updates of a learner's peer URLs with one
// URL and with the most a member may have (membership.MaxURLs), and a dry-run add of 3,000 peer
// URLs beside that learner, which the limit refuses before any comparison. The learner is never
// started, and is removed at the end.
func (b *bench) urlRuns(ctx context.Context) (*urlFigures, error) {
	ms, _, err := b.leaderFirst()
	if err != nil {
		return nil, err
	}
	cl, err := newClient(ms)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	urls := func(set, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("http://10.%d.%d.%d:2380", 100+set, i/256, i%256)
		}
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	add, err := cl.MemberAdd(cctx, "bench-urls", urls(0, 1), true)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("member add: %w", err)
	}
	f := &urlFigures{}
	runs := b.opt.warmup + b.opt.urlRuns
	if f.oneURL, err = b.updates(ctx, cl, add.ID, urls(1, 1), urls(0, 1), runs); err != nil {
		return nil, err
	}
	if f.maxURLs, err = b.updates(ctx, cl, add.ID, urls(2, membership.MaxURLs), urls(3, membership.MaxURLs), runs); err != nil {
		return nil, err
	}
	big := urls(4, dryRunURLs)
	for range runs {
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		start := time.Now()
		_, err := cl.MemberAddDryRun(cctx, "", big, true)
		d := time.Since(start)
		cancel()
		if !errors.Is(err, membership.ErrInvalidPeerURLs) {
			return nil, fmt.Errorf("dry-run add of %d URLs: %v, want the refusal of invalid URLs", dryRunURLs, err)
		}
		f.dryRun = append(f.dryRun, millis(d))
	}
	f.oneURL, f.maxURLs, f.dryRun = f.oneURL[b.opt.warmup:], f.maxURLs[b.opt.warmup:], f.dryRun[b.opt.warmup:]
	cctx, cancel = context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	if _, err := cl.MemberRemove(cctx, add.ID); err != nil {
		return nil, fmt.Errorf("member remove: %w", err)
	}
	return f, nil
}

// updates moves member id's peer URLs to a, then b, and so on, n times, and returns the time of
// each update.
func (b *bench) updates(ctx context.Context, cl *client.Client, id uint64, a, c []string, n int) (samples, error) {
	var s samples
	for i := range n {
		to := a
		if i%2 == 1 {
			to = c
		}
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		start := time.Now()
		_, err := cl.MemberUpdate(cctx, id, to)
		d := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("member update to %d URLs: %w", len(to), err)
		}
		s = append(s, millis(d))
	}
	return s, nil
}
