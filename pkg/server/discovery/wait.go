package discovery

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/clusterctl/clusterctl/pkg/registry"
)

// retryDelay is how long the wait pauses before it reads again after its watch failed.
const retryDelay = time.Second

// wait watches the registrations from rev on until the cluster is full, within
// cfg.WaitTimeout, logging its progress every cfg.ProgressInterval.
func (m *member) wait(ctx context.Context, size int, regs []registry.Registration, rev int64) (*registry.Cluster, error) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, m.cfg.WaitTimeout)
	defer cancel()
	byKey := map[string]registry.Registration{}
	for _, r := range regs {
		byKey[r.Key] = r
	}
	progress := time.NewTicker(m.cfg.ProgressInterval)
	defer progress.Stop()
	for {
		cl := registry.Place(size, slices.Collect(maps.Values(byKey)))
		if cl.Full() {
			return cl, nil
		}
		m.lg.Info("waiting for the other members to register", "size", size, "registered", len(cl.Members), "members", cl.Names())
		next, err := m.watch(wctx, size, byKey, rev, progress.C)
		switch {
		case err == nil:
			rev = next
			continue
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case wctx.Err() != nil:
			cl := registry.Place(size, slices.Collect(maps.Values(byKey)))
			return nil, &TimeoutError{Token: m.cfg.Token, Size: size, Registered: cl.Names(), Waited: time.Since(start).Round(time.Second)}
		}
		m.lg.Warn("watching the discovery service failed; reading it again", "error", err)
		select {
		case <-time.After(retryDelay):
		case <-wctx.Done():
			continue
		}
		// A fresh read: the watch may have missed events (a compaction, a lost connection).
		_, regs, r, rerr := m.read(wctx)
		if rerr != nil {
			continue
		}
		rev = r
		clear(byKey)
		for _, r := range regs {
			byKey[r.Key] = r
		}
	}
}

// watch applies the events after rev to byKey until the cluster is full, and returns the
// revision it has seen up to. It logs progress on every tick.
func (m *member) watch(ctx context.Context, size int, byKey map[string]registry.Registration, rev int64, tick <-chan time.Time) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := m.c.Watch(clientv3.WithRequireLeader(ctx), registry.MembersPrefix(m.cfg.Token), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case <-tick:
			cl := registry.Place(size, slices.Collect(maps.Values(byKey)))
			m.lg.Info("waiting for the other members to register", "size", size, "registered", len(cl.Members), "members", cl.Names())
		case wr, ok := <-w:
			if !ok {
				if ctx.Err() != nil {
					return rev, ctx.Err()
				}
				return rev, errors.New("watch closed")
			}
			if err := wr.Err(); err != nil {
				return rev, err
			}
			for _, ev := range wr.Events {
				key := string(ev.Kv.Key)
				if ev.Type == mvccpb.DELETE {
					delete(byKey, key)
				} else if r, err := registry.ParseRegistration(key, string(ev.Kv.Value), ev.Kv.CreateRevision); err != nil {
					m.skipped(err) // left out, as etcd does
				} else {
					byKey[key] = r
					m.lg.Info("found a member in the discovery service", "key", key, "value", r.Value)
				}
				rev = max(rev, ev.Kv.ModRevision)
			}
			if registry.Place(size, slices.Collect(maps.Values(byKey))).Full() {
				return rev, nil
			}
		}
	}
}
