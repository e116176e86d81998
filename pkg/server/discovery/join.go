package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/registry"
)

// Initial is JoinCluster's initial cluster read as bootstrap reads --initial-cluster, for the
// one-line call in clusterd's start-up.
func Initial(ctx context.Context, cfg Config, name string, peerURLs []string, lg *slog.Logger) ([]datadir.Initial, error) {
	s, err := JoinCluster(ctx, cfg, name, peerURLs, lg)
	if err != nil {
		return nil, err
	}
	initial, err := datadir.ParseInitialCluster(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalidURL, err)
	}
	return initial, nil
}

// JoinCluster registers the member name with peerURLs under cfg.Token, waits until the
// token's cluster is full, and returns the initial cluster in --initial-cluster's form. Every
// member of the cluster gets the same string. The member's registration key is its ID as a new
// cluster with the token as its cluster token derives it, so the same member always has the
// same key.
func JoinCluster(ctx context.Context, cfg Config, name string, peerURLs []string, lg *slog.Logger) (string, error) {
	if err := cfg.Validate(false); err != nil {
		return "", err
	}
	if !cfg.Enabled() {
		return "", errors.New("discovery: no --discovery-token given")
	}
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	id := uint64(datadir.MemberID(peerURLs, cfg.Token))
	m := &member{
		cfg:   cfg,
		name:  name,
		urls:  peerURLs,
		id:    id,
		key:   registry.MemberKey(cfg.Token, id),
		value: registry.Value(name, peerURLs),
		lg:    lg.With("discovery-token", cfg.Token, "discovery-endpoints", strings.Join(cfg.Endpoints, ",")),
	}
	ccfg, err := cfg.clientConfig()
	if err != nil {
		return "", err
	}
	// clientv3.New waits for a connection only to authenticate; connect waits for it otherwise.
	if m.c, err = clientv3.New(*ccfg); err != nil {
		return "", m.unreachable(err)
	}
	defer m.c.Close()
	if err := m.connect(ctx); err != nil {
		return "", err
	}
	return m.join(ctx)
}

// member is one member's run through discovery.
type member struct {
	cfg   Config
	c     *clientv3.Client
	lg    *slog.Logger
	name  string
	urls  []string
	id    uint64
	key   string // its registration
	value string // its registration's value
}

func (m *member) join(ctx context.Context) (string, error) {
	size, regs, rev, err := m.read(ctx)
	if err != nil {
		return "", err
	}
	boot, err := m.bootstrapped(ctx)
	if err != nil {
		return "", err
	}
	cl := registry.Place(size, regs)
	if err := m.admit(cl, boot); err != nil {
		return "", err
	}
	if _, ok := cl.Find(m.key); ok {
		m.lg.Info("found this member's own registration: going on where it stopped", "key", m.key, "value", m.value)
	} else {
		if err := m.register(ctx); err != nil {
			return "", err
		}
		// Read again: the wait starts from what is registered now, this member included.
		if size, regs, rev, err = m.read(ctx); err != nil {
			return "", err
		}
	}
	cl, err = m.wait(ctx, size, regs, rev)
	if err != nil {
		return "", err
	}
	if err := m.placedIn(cl); err != nil {
		return "", err
	}
	m.markBootstrapped(ctx)
	m.lg.Info("discovery found the whole cluster", "size", size, "initial-cluster", cl.InitialCluster())
	return cl.InitialCluster(), nil
}

// admit refuses, before anything is written, a member the registrations already rule out.
func (m *member) admit(cl *registry.Cluster, bootstrapped bool) error {
	if p, ok := cl.Find(m.key); ok {
		// Same key: same peer URLs and token.
		if p.Value != m.value {
			return &TakenError{Token: m.cfg.Token, What: "peer URLs " + strings.Join(m.urls, ","), By: p.Value}
		}
		if bootstrapped {
			return &BootstrappedError{Token: m.cfg.Token, Name: m.name, ID: m.id}
		}
		return m.placedIn(cl)
	}
	if cl.Full() {
		return &FullError{Token: m.cfg.Token, Size: cl.Size, Members: cl.Names()}
	}
	return m.clash(cl)
}

// clash refuses a member whose name or a peer URL another registration holds.
func (m *member) clash(cl *registry.Cluster) error {
	for _, p := range cl.All {
		if p.State == registry.Conflict || p.Key == m.key {
			continue
		}
		if p.Name == m.name {
			return &TakenError{Token: m.cfg.Token, What: fmt.Sprintf("name %q", m.name), By: p.Value}
		}
		for _, u := range p.PeerURLs {
			if slices.Contains(m.urls, u) {
				return &TakenError{Token: m.cfg.Token, What: "peer URL " + u, By: p.Value}
			}
		}
	}
	return nil
}

// placedIn refuses a member whose registration did not make it into the cluster: registered
// after it filled, or clashing with an earlier registration.
func (m *member) placedIn(cl *registry.Cluster) error {
	p, ok := cl.Find(m.key)
	switch {
	case !ok:
		return fmt.Errorf("discovery: the registration %s disappeared from the discovery service; start this member again", m.key)
	case p.State == registry.BeyondSize:
		return &FullError{Token: m.cfg.Token, Size: cl.Size, Members: cl.Names()}
	case p.State == registry.Conflict:
		with, _ := cl.Find(p.With)
		if with.Name == m.name {
			return &TakenError{Token: m.cfg.Token, What: fmt.Sprintf("name %q", m.name), By: with.Value}
		}
		return &TakenError{Token: m.cfg.Token, What: "a peer URL", By: with.Value}
	}
	return nil
}

// connect waits until the client is connected to the discovery service, within the dial
// timeout: a service that is down is refused once --discovery-dial-timeout has passed, as the
// flag says, and not only when the first request's timeout has passed too (the client's reads
// wait for a connection for as long as their context lets them).
func (m *member) connect(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, m.cfg.DialTimeout)
	defer cancel()
	conn := m.c.ActiveConnection()
	conn.Connect()
	for {
		state := conn.GetState()
		if state == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(dctx, state) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &UnreachableError{Endpoints: m.cfg.Endpoints, Within: m.cfg.DialTimeout,
				Err: fmt.Errorf("no connection, state %s", state)}
		}
	}
}

// read returns the expected size and every registration, with the revision they were read at.
// A service that does not answer within the request timeout is an *UnreachableError.
func (m *member) read(ctx context.Context) (int, []registry.Registration, int64, error) {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	sr, err := m.c.Get(rctx, registry.SizeKey(m.cfg.Token))
	if err != nil {
		return 0, nil, 0, m.failed(ctx, err, m.cfg.RequestTimeout)
	}
	mr, err := m.c.Get(rctx, registry.MembersPrefix(m.cfg.Token), clientv3.WithPrefix())
	if err != nil {
		return 0, nil, 0, m.failed(ctx, err, m.cfg.RequestTimeout)
	}
	size, regs, err := registry.Read(m.cfg.Token, m.cfg.Endpoints, append(sr.Kvs, mr.Kvs...), m.skipped)
	return size, regs, mr.Header.Revision, err
}

// skipped logs a registration that cannot be read.
func (m *member) skipped(err error) {
	m.lg.Warn("ignoring a registration that cannot be read", "error", err)
}

// bootstrapped reports whether this member already left discovery with the full cluster.
func (m *member) bootstrapped(ctx context.Context) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	r, err := m.c.Get(rctx, registry.BootstrappedKey(m.cfg.Token, m.id), clientv3.WithCountOnly())
	if err != nil {
		return false, m.failed(ctx, err, m.cfg.RequestTimeout)
	}
	return r.Count > 0, nil
}

// register writes this member's registration unless a registration under its key exists,
// which is then either its own from an earlier start or another member's with the same peer
// URLs.
func (m *member) register(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	// Over the etcd client's connection, with its credentials: the one create-if-absent
	// transaction clusterctl's discovery new sends too.
	r, err := pb.NewKVClient(m.c.ActiveConnection()).Txn(rctx, registry.CreateTxn(m.key, m.value))
	if err != nil {
		return m.failed(ctx, err, m.cfg.RequestTimeout)
	}
	if _, existing := registry.CreateAnswer(r); existing != nil && string(existing.GetValue()) != m.value {
		return &TakenError{Token: m.cfg.Token, What: "peer URLs " + strings.Join(m.urls, ","), By: string(existing.GetValue())}
	}
	m.lg.Info("registered this member with the discovery service", "key", m.key, "value", m.value)
	return nil
}

// markBootstrapped records that this member leaves discovery with the full cluster. A failure
// only costs the check that refuses a start of the same member on a lost data directory, so it
// is logged and bootstrap goes on.
func (m *member) markBootstrapped(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	if _, err := m.c.Put(rctx, registry.BootstrappedKey(m.cfg.Token, m.id), m.name); err != nil {
		m.lg.Warn("could not record on the discovery service that this member bootstrapped", "error", err)
	}
}

// failed words an error of a request: the caller's own cancellation as it is, a service that
// does not answer as an *UnreachableError, a user that may not use the token's keys as a
// *PermissionError, anything else with its reason.
func (m *member) failed(ctx context.Context, err error, within time.Duration) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &UnreachableError{Endpoints: m.cfg.Endpoints, Within: within, Err: err}
	}
	if e := rpctypes.Error(err); e == rpctypes.ErrPermissionDenied {
		user, _ := m.cfg.credentials()
		return &PermissionError{Endpoints: m.cfg.Endpoints, User: user, Token: m.cfg.Token, Err: e}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return &UnreachableError{Endpoints: m.cfg.Endpoints, Within: within, Err: err}
	}
	return fmt.Errorf("discovery: %w", err)
}

// unreachable words an error of connecting. etcd's client authenticates as it connects, so a
// refused user or password comes here too: the service answered, and the line says so.
func (m *member) unreachable(err error) error {
	if credentialsRefused(err) {
		return &CredentialsError{Endpoints: m.cfg.Endpoints, Err: rpctypes.Error(err)}
	}
	return &UnreachableError{Endpoints: m.cfg.Endpoints, Within: m.cfg.DialTimeout, Err: err}
}
