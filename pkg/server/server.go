package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/api"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// Server is one clusterd member.
type Server struct {
	cfg     Config
	initial []datadir.Initial
}

// New checks cfg; nothing is written or opened yet.
func New(cfg Config) (*Server, error) {
	initial, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, initial: initial}, nil
}

// Run starts the member and serves until ctx ends (nil), the member is removed (ErrRemoved),
// or something fails.
func (s *Server) Run(ctx context.Context) error {
	peerLs, err := listenAll("--listen-peer-urls", s.cfg.ListenPeerURLs)
	if err != nil {
		return err
	}
	clientLs, err := listenAll("--listen-client-urls", s.cfg.ListenClientURLs)
	if err != nil {
		closeAll(peerLs)
		return err
	}
	metricsLs, err := listenAll("--listen-metrics-urls", s.cfg.ListenMetricsURLs)
	if err != nil {
		closeAll(peerLs)
		closeAll(clientLs)
		return err
	}
	o, err := s.open(ctx)
	if err != nil {
		closeAll(peerLs)
		closeAll(clientLs)
		closeAll(metricsLs)
		return err
	}
	defer o.store.Close()

	log := s.cfg.Logger.With("member", o.state.MemberID.String())
	tr := transport.New(transport.Config{LocalID: o.state.MemberID, ClusterID: o.state.ClusterID, Logger: log})
	defer tr.Close()
	tr.SetPeers(o.hints)
	node, err := raftnode.New(raftnode.Config{
		Store: o.store, State: o.state, Transport: tr,
		TickInterval: s.cfg.HeartbeatInterval, ElectionTicks: int(s.cfg.ElectionTimeout / s.cfg.HeartbeatInterval),
		SnapshotCount: s.cfg.SnapshotCount, Logger: log,
	})
	if err != nil {
		closeAll(peerLs)
		closeAll(clientLs)
		closeAll(metricsLs)
		return err
	}
	tr.Attach(node)
	coord := reconfig.New(reconfig.Config{
		Node: node, Transport: tr, ElectionTimeout: s.cfg.ElectionTimeout,
		StrictReconfig: s.cfg.StrictReconfigCheck, MaxLearners: s.cfg.MaxLearners,
	})
	defer coord.Close()

	peerSrv := grpc.NewServer(append(transport.ServerWindow(),
		transport.ServerCodec(), grpc.MaxRecvMsgSize(transport.MaxMessageSize))...)
	tr.Register(peerSrv)
	coord.Register(peerSrv)
	clientSrv := grpc.NewServer(transport.ServerWindow()...)
	api.New(api.Config{
		Node: node, Coordinator: coord, ClusterID: o.state.ClusterID, Store: o.store,
		DBPath:         filepath.Join(s.cfg.DataDir, storage.FileName),
		RequestTimeout: 5*time.Second + 2*s.cfg.ElectionTimeout,
	}).Register(clientSrv)
	healthSrv := health.NewServer()
	healthpb.RegisterHealthServer(clientSrv, healthSrv)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	serve := func(srv *grpc.Server, ls []net.Listener) {
		for _, l := range ls {
			wg.Add(1)
			go func() { defer wg.Done(); _ = srv.Serve(l) }()
		}
	}
	serve(peerSrv, peerLs)
	serve(clientSrv, clientLs)
	metricsSrv := &http.Server{Handler: debugHandler(node, s.cfg.EnablePprof), ReadHeaderTimeout: 5 * time.Second}
	for _, l := range metricsLs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = metricsSrv.Serve(l) }()
	}
	// Listening now: peers that backed off from this member while it was down may send again.
	tr.Greet()
	wg.Add(3)
	go func() {
		defer wg.Done()
		publish(runCtx, coord, o.state.MemberID, o.state.Name, s.cfg.AdvertiseClientURLs)
	}()
	go func() { defer wg.Done(); watchRemoval(runCtx, node, tr, s.cfg.ElectionTimeout) }()
	go func() { defer wg.Done(); watchHealth(runCtx, node, healthSrv, s.cfg.HeartbeatInterval) }()
	log.Info("clusterd started", "name", s.cfg.Name, "cluster", o.state.ClusterID.String(),
		"peer-urls", s.cfg.ListenPeerURLs, "client-urls", s.cfg.ListenClientURLs)

	runErr := node.Run(runCtx)
	cancel()
	healthSrv.Shutdown()
	// A profile being taken is cut short: it would hold the member up for its whole length.
	metricsSrv.Close()
	stopGracefully(clientSrv, time.Second)
	stopGracefully(peerSrv, time.Second)
	wg.Wait()
	if errors.Is(runErr, raftnode.ErrRemoved) {
		return ErrRemoved
	}
	return runErr
}

// publish tells the cluster this member's name (the one its data was created with) and client URLs, retrying until it is applied:
// that is what turns it from unstarted to started.
func publish(ctx context.Context, coord *reconfig.Coordinator, id membership.ID, name string, clientURLs []string) {
	req := reconfig.Request{Change: membership.Change{Kind: membership.KindPublish, Member: membership.Member{
		ID: id, Name: name, ClientURLs: clientURLs,
	}}}
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := coord.Do(pctx, req)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
			backoff = min(2*backoff, time.Second)
		}
	}
}

// watchRemoval catches a removal this member missed. A voter that lost its leader campaigns and
// is refused by its peers as removed, but a learner never campaigns, and a member removed before
// it caught up has no leader at all: so when the leader has been silent for two election
// timeouts, ask the peers whether this member is still in the cluster.
func watchRemoval(ctx context.Context, node *raftnode.Node, tr *transport.Transport, electionTimeout time.Duration) {
	t := time.NewTicker(2 * electionTimeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if lead := node.Leader(); lead == node.ID() || lead != 0 && tr.HeardWithin(lead, 2*electionTimeout) {
			continue
		}
		for _, u := range tr.PeerURLs() {
			qctx, cancel := context.WithTimeout(ctx, electionTimeout)
			info, err := reconfig.FetchMembership(qctx, u)
			cancel()
			if err == nil && info.Cluster.ID == node.Cluster().ID && info.Cluster.IsRemoved(node.ID()) {
				node.MarkRemoved()
				return
			}
		}
	}
}

func watchHealth(ctx context.Context, node *raftnode.Node, h *health.Server, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if node.Leader() != 0 {
			st = healthpb.HealthCheckResponse_SERVING
		}
		h.SetServingStatus("", st)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func stopGracefully(srv *grpc.Server, within time.Duration) {
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		srv.Stop()
	}
}

func listenAll(flag string, urls []string) ([]net.Listener, error) {
	var ls []net.Listener
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			closeAll(ls)
			return nil, fmt.Errorf("%s %q: %v", flag, raw, err)
		}
		network, addr := "tcp", u.Host
		if u.Scheme == "unix" {
			network, addr = "unix", u.Path
		}
		l, err := net.Listen(network, addr)
		if err != nil {
			closeAll(ls)
			return nil, fmt.Errorf("%s %q: %v", flag, raw, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}
