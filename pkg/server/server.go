package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/api"
	"github.com/clusterctl/clusterctl/pkg/server/authz"
	"github.com/clusterctl/clusterctl/pkg/server/logfmt"
	"github.com/clusterctl/clusterctl/pkg/server/metrics"
	"github.com/clusterctl/clusterctl/pkg/server/portmux"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/server/sdnotify"
	"github.com/clusterctl/clusterctl/pkg/server/servertls"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// Server is one clusterd member.
type Server struct {
	cfg     Config
	initial []datadir.Initial

	// Set by Run from cfg.TLS: the tls.Configs of the ports, the credentials this member dials
	// https:// peers with (always set: without peer certificates it can still dial a TLS peer
	// that asks for none, as in etcd), and the refusal logs of both ports.
	tls       *servertls.Configs
	peerCreds credentials.TransportCredentials
	refusals  map[string]*servertls.Refusals // by port: "client", "peer"
}

// refusalInterval is how often a peer refused for the same reason is logged again.
const refusalInterval = 10 * time.Minute

// New checks cfg; nothing is written or opened yet.
func New(cfg Config) (*Server, error) {
	initial, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, initial: initial}, nil
}

// Run starts the member and serves until ctx ends (nil), the member is removed (ErrRemoved),
// or something fails. Its steps: listen, open the data directory, build the member on it,
// serve, shut down.
func (s *Server) Run(ctx context.Context) error {
	// The certificate files, then the listeners, come first, so that a bad file or a port in
	// use is refused before the data directory is touched. One cleanup for every way out: the
	// servers close their listeners when they stop, and closing a listener again does nothing.
	if err := s.buildTLS(); err != nil {
		return err
	}
	var ls listeners
	defer ls.close()
	if err := ls.listen(s.cfg); err != nil {
		return err
	}
	o, err := s.open(ctx)
	if err != nil {
		return err
	}
	m := &running{store: o.store, state: o.state}
	defer m.close()
	if err := s.build(m, o.hints); err != nil {
		return err
	}
	return s.serve(ctx, &ls, m)
}

// buildTLS loads the certificates (making auto TLS's) and the credentials of both ports.
func (s *Server) buildTLS() error {
	cfgs, err := servertls.Build(s.cfg.TLS)
	if err != nil {
		return err
	}
	s.tls = cfgs
	s.refusals = map[string]*servertls.Refusals{
		"client": servertls.NewRefusals(s.cfg.Logger, "client", refusalInterval),
		"peer":   servertls.NewRefusals(s.cfg.Logger, "peer", refusalInterval),
	}
	s.peerCreds = servertls.Credentials(cfgs.PeerClient, s.refusals["peer"])
	return nil
}

// listeners are the member's sockets, by the flag that names them.
type listeners struct{ peer, client, metrics []net.Listener }

func (ls *listeners) listen(cfg Config) error {
	var err error
	if ls.peer, err = listenAll("--listen-peer-urls", cfg.ListenPeerURLs); err != nil {
		return err
	}
	if ls.client, err = listenAll("--listen-client-urls", cfg.ListenClientURLs); err != nil {
		return err
	}
	ls.metrics, err = listenAll("--listen-metrics-urls", cfg.ListenMetricsURLs)
	return err
}

func (ls *listeners) close() {
	closeAll(ls.peer)
	closeAll(ls.client)
	closeAll(ls.metrics)
}

// running is what runs on a member's opened storage. Its parts are built in order by build, and
// close closes those that were built, in the reverse order.
type running struct {
	store *storage.Store
	state *storage.State
	log   *slog.Logger

	tr    *transport.Transport
	hints *membership.Cluster // the peers to reach before the membership names any
	node  *raftnode.Node
	coord *reconfig.Coordinator

	// peerSrv and clientSrv serve each port's plain listeners, peerTLS and clientTLS its
	// https:// ones: gRPC takes one kind of credentials per server.
	peerSrv, peerTLS     *grpc.Server
	clientSrv, clientTLS *grpc.Server
	health               *health.Server
	// metricsHTTP serves /metrics, /health and, with --enable-pprof, the profiles on
	// --listen-metrics-urls, and nowhere else. clientHTTP serves /metrics and /health alone on
	// the HTTP/1 half of every plain client listener (muxes); metricsTLS serves the same on the
	// HTTP half of every https:// one, and passes on the gRPC calls that come to it.
	metricsHTTP, clientHTTP, metricsTLS *http.Server
	muxes                               []*portmux.Mux
	// metrics are this member's own (docs/metrics.md): a registry per member run, so that members
	// in one process (the in-process cluster tests) do not share series.
	metrics *metrics.Metrics
	notify  *sdnotify.Notifier // the member's state to systemd (docs/systemd.md)
	// forcedOut is what the last removal check found of a forced removal that the majority
	// does not confirm (watchRemoval), for Status's errors; nil when nothing.
	forcedOut atomic.Pointer[[]string]
}

func (m *running) close() {
	if m.tr != nil {
		m.tr.Close()
	}
	m.store.Close()
}

// build makes the raft node on the stored state, with the transport it talks through (which
// knows hints, the peers to reach before the membership names any), the coordinator of
// membership changes, and the services of the peer, client and metrics ports.
func (s *Server) build(m *running, hints *membership.Cluster) error {
	m.log = logfmt.WithMember(s.cfg.Logger, uint64(m.state.MemberID))
	m.metrics, m.notify = metrics.New(metrics.Options{}), sdnotify.FromEnv()
	m.tr = transport.New(transport.Config{LocalID: m.state.MemberID, ClusterID: m.state.ClusterID, Logger: m.log,
		PeerCreds: s.peerCreds, Metrics: m.metrics,
		PeerAllowedCNs: s.cfg.TLS.Peer.AllowedCNs, PeerAllowedHostnames: s.cfg.TLS.Peer.AllowedHostnames})
	m.tr.SetPeers(hints)
	m.hints = hints
	node, err := raftnode.New(raftnode.Config{
		Store: m.store, State: m.state, Transport: m.tr,
		TickInterval: s.cfg.HeartbeatInterval, ElectionTicks: int(s.cfg.ElectionTimeout / s.cfg.HeartbeatInterval),
		SnapshotCount: s.cfg.SnapshotCount, MaxHistory: s.cfg.MaxHistory, Logger: m.log, Metrics: m.metrics,
	})
	if err != nil {
		return err
	}
	m.node = node
	m.metrics.ReadStateFrom(node.MetricsState)
	m.tr.Attach(node)
	m.coord = reconfig.New(reconfig.Config{
		Node: node, Transport: m.tr, ElectionTimeout: s.cfg.ElectionTimeout,
		StrictReconfig: s.cfg.StrictReconfigCheck, MaxLearners: s.cfg.MaxLearners, Metrics: m.metrics,
		Logger: m.log,
	})

	m.health = health.NewServer()
	peer := func(opts ...grpc.ServerOption) *grpc.Server {
		srv := grpc.NewServer(append(transport.PeerServerOptions(), opts...)...)
		m.tr.Register(srv)
		m.coord.Register(srv)
		return srv
	}
	clientAPI := api.New(api.Config{
		Node: node, Coordinator: m.coord, ClusterID: m.state.ClusterID, Store: m.store,
		RequestTimeout: 5*time.Second + 2*s.cfg.ElectionTimeout, Conditions: m.conditions,
	})
	admin := authz.Interceptors(s.cfg.AdminAllowedCNs)
	client := func(opts ...grpc.ServerOption) *grpc.Server {
		opts = append(append(transport.ServerWindow(), m.metrics.GRPCServerOptions()...), opts...)
		srv := grpc.NewServer(append(opts, admin...)...)
		clientAPI.Register(srv)
		healthpb.RegisterHealthServer(srv, m.health)
		m.metrics.InitGRPC(srv)
		return srv
	}
	m.peerSrv, m.clientSrv = peer(), client()
	if s.tls.PeerServer != nil {
		m.peerTLS = peer(grpc.Creds(servertls.Credentials(s.tls.PeerServer, s.refusals["peer"])))
	}
	// The profiles (the command line, every goroutine) only on the metrics URLs, which
	// docs/clusterd.md says hold them: a client URL serves any client, and on TLS any
	// certificate the client CA signed, whatever --admin-cert-allowed-cn says.
	m.metricsHTTP = &http.Server{Handler: withMetrics(debugHandler(node, s.cfg.EnablePprof), m.metrics), ReadHeaderTimeout: httpHeaderTimeout}
	handler := withMetrics(debugHandler(node, false), m.metrics)
	m.clientHTTP = &http.Server{Handler: handler, ReadHeaderTimeout: httpHeaderTimeout}
	if s.tls.Client != nil {
		// The client port's mux terminates TLS (serveClients): the connections reach gRPC
		// handshaken.
		m.clientTLS = client(grpc.Creds(servertls.Terminated()))
		m.metricsTLS = &http.Server{Handler: portmux.SplitHTTP2(m.clientTLS, handler), ReadHeaderTimeout: httpHeaderTimeout}
	}
	return nil
}

// httpHeaderTimeout bounds how long an HTTP client may take to send its request's headers, and
// a connection to a plain client URL to show whether it is gRPC or HTTP/1 (portmux): a client
// that connects and says nothing is closed then.
const httpHeaderTimeout = 5 * time.Second

// serveClients serves the client listeners, each split (portmux) between gRPC and HTTP, as
// etcd's client port is: /metrics and /health are there as on the metrics URLs. On an https://
// (or unixs://) one the mux terminates TLS with the client port's config, and logs a refused
// client through the port's Refusals, as gRPC's credentials did: docs/metrics.md has the
// details.
func (s *Server) serveClients(wg *sync.WaitGroup, ls []net.Listener, m *running) {
	for i, l := range ls {
		var mux *portmux.Mux
		grpcSrv, httpSrv := m.clientSrv, m.clientHTTP
		if secureURL(s.cfg.ListenClientURLs[i]) {
			mux = portmux.NewTLS(l, httpHeaderTimeout, s.tls.Client, s.refusals["client"].Refused)
			grpcSrv, httpSrv = m.clientTLS, m.metricsTLS
		} else {
			mux = portmux.New(l, httpHeaderTimeout)
		}
		m.muxes = append(m.muxes, mux)
		wg.Go(func() { _ = grpcSrv.Serve(mux.GRPC()) })
		wg.Go(func() { _ = httpSrv.Serve(mux.HTTP()) })
		wg.Go(func() { _ = mux.Serve() })
	}
}

// serve runs the member until its raft node stops, then shuts it down: the work beside the
// node first, then the ports, so that no answer comes from a member that no longer runs.
func (s *Server) serve(ctx context.Context, ls *listeners, m *running) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, l := range ls.peer {
		srv := m.peerSrv
		if secureURL(s.cfg.ListenPeerURLs[i]) {
			srv = m.peerTLS // Validate made sure it exists
		}
		wg.Go(func() { _ = srv.Serve(l) })
	}
	s.serveClients(&wg, ls.client, m)
	for _, l := range ls.metrics {
		wg.Go(func() { _ = m.metricsHTTP.Serve(l) })
	}
	// Listening now: peers that backed off from this member while it was down may send again.
	m.tr.Greet()
	wg.Go(func() { publish(runCtx, m.coord, m.state.MemberID, m.state.Name, s.cfg.AdvertiseClientURLs) })
	wg.Go(func() { readyWhenJoined(runCtx, m.node, m.notify, s.cfg.OnReady, m.log) })
	wg.Go(func() {
		watchRemoval(runCtx, m, s.peerCreds, s.cfg.ElectionTimeout)
	})
	wg.Go(func() { watchHealth(runCtx, m.node, m.health, s.cfg.HeartbeatInterval) })
	m.log.Info("clusterd started", "name", s.cfg.Name, "cluster", m.state.ClusterID.String(),
		"peer-urls", s.cfg.ListenPeerURLs, "client-urls", s.cfg.ListenClientURLs)

	runErr := m.node.Run(runCtx)
	// As soon as shutdown begins: systemd reports the unit deactivating, not failed.
	if err := m.notify.Stopping(); err != nil {
		m.log.Warn("cannot tell systemd the member is stopping", "err", err)
	}
	cancel()
	m.health.Shutdown()
	// A profile being taken is cut short: it would hold the member up for its whole length.
	m.metricsHTTP.Close()
	m.clientHTTP.Close()
	if m.metricsTLS != nil {
		m.metricsTLS.Close()
	}
	for _, srv := range []*grpc.Server{m.clientSrv, m.clientTLS, m.peerSrv, m.peerTLS} {
		if srv != nil {
			stopGracefully(srv, time.Second)
		}
	}
	for _, mux := range m.muxes {
		mux.Close()
	}
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
	}, By: membership.Origin{Clusterd: membership.OriginPublish}}}
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

// secureURL reports whether a listen URL speaks TLS.
func secureURL(listenURL string) bool {
	return strings.HasPrefix(listenURL, "https://") || strings.HasPrefix(listenURL, "unixs://")
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

// listenAll listens on urls, which Config.validate checked (ValidateURL): each one parses.
func listenAll(flag string, urls []string) ([]net.Listener, error) {
	var ls []net.Listener
	for _, raw := range urls {
		u, _ := url.Parse(raw)
		network, addr := "tcp", u.Host
		if u.Scheme == "unix" || u.Scheme == "unixs" {
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
