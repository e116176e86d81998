package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
)

// Config is what a Client needs to reach a cluster.
type Config struct {
	// Endpoints are client addresses, "host:port", "http://host:port" or "https://host:port",
	// in order of preference, all reached the same way.
	Endpoints []string
	// DialTimeout bounds connecting, over all endpoints together.
	DialTimeout time.Duration
	// TLS is the configuration from the TLS flags, nil when none was given. As in etcdctl, an
	// https:// endpoint always uses TLS (with the system's roots when TLS is nil), an http://
	// endpoint never does, and a bare host:port does when TLS is set or BareTLS is.
	TLS *tls.Config
	// BareTLS is etcdctl's --insecure-transport=false: a bare host:port uses TLS even without
	// TLS flags.
	BareTLS bool
	// Username and Password authenticate with etcd's Auth service on the first request; no
	// Username, no authentication.
	Username, Password string
}

// Client is a connection to one member of a cluster, made on first use.
type Client struct {
	endpoints []string // host:port, in order of preference
	dialed    []clienttls.Dialed
	creds     credentials.TransportCredentials
	// tls is the configuration creds were made of, nil for plain endpoints: the HTTP requests a
	// member serves beside gRPC (/metrics) go with the same settings.
	tls         *tls.Config
	dialTimeout time.Duration

	username, password string
	// token is the auth token sent with every request once authenticated; authed says
	// Authenticate was asked, since a server without auth gives no token.
	token  string
	authed bool

	conn *grpc.ClientConn
	at   int // index in endpoints of the member conn is connected to
}

// New checks the endpoints and returns a Client. It does no I/O.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no endpoints given")
	}
	if cfg.DialTimeout <= 0 {
		return nil, fmt.Errorf("dial timeout must be positive, not %s", cfg.DialTimeout)
	}
	c := &Client{
		endpoints:   make([]string, len(cfg.Endpoints)),
		dialed:      make([]clienttls.Dialed, len(cfg.Endpoints)),
		dialTimeout: cfg.DialTimeout,
		username:    cfg.Username,
		password:    cfg.Password,
	}
	for i, e := range cfg.Endpoints {
		addr, secure, err := parseEndpoint(e, cfg.TLS != nil || cfg.BareTLS)
		if err != nil {
			return nil, err
		}
		if i > 0 && secure != c.dialed[0].TLS {
			return nil, fmt.Errorf("endpoints %q and %q: one uses TLS and the other does not; give endpoints of one kind", cfg.Endpoints[0], e)
		}
		c.endpoints[i] = addr
		c.dialed[i] = clienttls.Dialed{Endpoint: e, TLS: secure, ClientCert: cfg.TLS != nil && cfg.TLS.GetClientCertificate != nil}
	}
	c.creds = insecure.NewCredentials()
	if c.dialed[0].TLS {
		c.tls = cmp.Or(cfg.TLS, &tls.Config{MinVersion: tls.VersionTLS12})
		c.creds = credentials.NewTLS(c.tls)
	}
	return c, nil
}

// parseEndpoint accepts etcdctl's endpoint forms and returns the address to dial and whether it
// is reached over TLS; bareTLS is the answer for an endpoint without a scheme. Everything else is
// refused here, before any I/O, in words that say what is wrong: a path (a member serves its API
// at the root, and "h:p/x" would otherwise go to DNS as the port "p/x"), an empty host, a port
// that is not a number from 1 to 65535. A lone trailing "/" is accepted, as etcd's clients do.
func parseEndpoint(e string, bareTLS bool) (string, bool, error) {
	addr, secure := e, bareTLS
	switch {
	case strings.HasPrefix(e, "https://"):
		addr, secure = strings.TrimPrefix(e, "https://"), true
	case strings.HasPrefix(e, "http://"):
		addr, secure = strings.TrimPrefix(e, "http://"), false
	case strings.Contains(e, "://"):
		return "", false, fmt.Errorf("endpoint %q: only host:port, http://host:port or https://host:port is supported", e)
	}
	if addr != e {
		addr = strings.TrimSuffix(addr, "/")
	}
	if strings.ContainsAny(addr, "/?#@") {
		return "", false, fmt.Errorf("endpoint %q: must be host:port without a path, query or user: only host:port, http://host:port or https://host:port is supported", e)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, fmt.Errorf("endpoint %q: %v", e, err)
	}
	if host == "" {
		return "", false, fmt.Errorf("endpoint %q: no host", e)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", false, fmt.Errorf("endpoint %q: the port must be a number from 1 to 65535", e)
	}
	return addr, secure, nil
}

// shown is endpoint i as messages name it: as given, its scheme kept (https://10.0.0.1:2379),
// without a trailing "/".
func (c *Client) shown(i int) string {
	given := c.dialed[i].Endpoint
	if scheme, _, ok := strings.Cut(given, "://"); ok {
		return scheme + "://" + c.endpoints[i]
	}
	return c.endpoints[i]
}

// Close releases the connection, if one was made.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// call runs rpc, the call of method, on a connected member. A read that fails in transport or
// is answered with Unavailable moves on to the next endpoint; a change is never sent twice,
// because its first attempt may have been applied. Authentication counts as a read: the change
// is not sent until it succeeds.
func (c *Client) call(ctx context.Context, read bool, method string, rpc func(context.Context, *grpc.ClientConn) error) error {
	var failed []EndpointFailure
	// Each pass connects to a later endpoint than the previous one, so there are at most
	// len(c.endpoints) passes.
	for from := 0; from < len(c.endpoints); {
		if err := c.connect(ctx, from); err != nil {
			ce, ok := errors.AsType[*ConnectError](err)
			if !ok {
				return err
			}
			if i := slices.IndexFunc(ce.Tried, func(t EndpointFailure) bool { return t.Peer }); i >= 0 {
				return &PeerEndpointError{Endpoint: ce.Tried[i].Endpoint, Message: "it answers etcd's peer /version"}
			}
			return gaveUp(ctx, append(failed, ce.Tried...))
		}
		sent, err := c.attempt(ctx, method, rpc)
		if err == nil {
			return nil
		}
		endpoint := c.shown(c.at)
		se := serverAnswer(err)
		if se != nil && peerEndpoint(se) {
			return &PeerEndpointError{Endpoint: endpoint, Message: se.Message}
		}
		if !read && sent {
			return c.changeAnswer(se, err)
		}
		if se != nil && se.Code != codes.Unavailable {
			return se
		}
		// A read, or a change not sent: another member may answer what this one could not.
		failed = append(failed, EndpointFailure{Endpoint: endpoint, Reason: status.Convert(err).Message(), Answer: se,
			deadline: status.Code(err) == codes.DeadlineExceeded})
		if ctx.Err() != nil || c.at == len(c.endpoints)-1 {
			for i := c.at + 1; i < len(c.endpoints); i++ {
				failed = append(failed, EndpointFailure{Endpoint: c.shown(i), Reason: "not tried: no time left"})
			}
			return gaveUp(ctx, failed)
		}
		from = c.at + 1
		c.Close()
	}
	return gaveUp(ctx, failed)
}

// changeAnswer is the error a change that was sent to the member connected to ends with: the
// server's answer se (nil for none) to it, unless it leaves the change's outcome open, as a
// transport failure err does.
func (c *Client) changeAnswer(se *ServerError, err error) error {
	switch {
	case se == nil:
		return &OutcomeUnknownError{Endpoint: c.endpoints[c.at], Err: err}
	case outcomeUnknown(se):
		return &OutcomeUnknownError{Endpoint: c.endpoints[c.at], Err: se}
	}
	return se
}

// gaveUp is the error once no endpoint is left to ask, chosen by what happened rather than by
// which endpoint happened to be asked last: a member's answer that names the cause ("no
// leader", "server stopped") wins, since it is what the operator acts on; then a deadline that
// ran out, or a member's own timeout, is a *TimeoutError; only when nothing answered at all is
// it a *ConnectError. TLS failures stay a *ConnectError, whose TLS the caller looks for.
func gaveUp(ctx context.Context, tried []EndpointFailure) error {
	timedOut := ctx.Err() != nil
	for i := len(tried) - 1; i >= 0; i-- {
		timedOut = timedOut || tried[i].deadline
		if se := tried[i].Answer; se != nil {
			if !outcomeUnknown(se) {
				return se
			}
			timedOut = true
		}
	}
	ce := &ConnectError{Tried: tried}
	if timedOut && ce.TLS() == nil {
		return &TimeoutError{Tried: tried}
	}
	return ce
}
