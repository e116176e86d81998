package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// staggerDelay is how long an endpoint that neither answers nor fails holds up the next one.
// Refused connections fail at once and move on immediately; this only matters for an address
// that drops packets, which would otherwise use the whole dial timeout (RFC 8305 uses 250 ms for
// the same purpose).
const staggerDelay = 250 * time.Millisecond

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
	endpoints   []string // host:port, in order of preference
	dialed      []clienttls.Dialed
	creds       credentials.TransportCredentials
	dialTimeout time.Duration

	username, password string
	// token is the auth token sent with every request once authenticated; authed says
	// Authenticate was asked, since a server without auth gives no token.
	token  string
	authed bool

	conn *grpc.ClientConn
	at   int // index in endpoints of the member conn is connected to
	// clusterdAt is the endpoint that last answered with clusterd's metadata: a dry run is
	// sent only there, since etcd would ignore the flag and make the change.
	clusterdAt string
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
		t := cfg.TLS
		if t == nil {
			t = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.creds = credentials.NewTLS(t)
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

// Close releases the connection, if one was made.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// call runs rpc on a connected member. A read that fails in transport or is answered with
// Unavailable moves on to the next endpoint; a change is never sent twice, because its first
// attempt may have been applied. Authentication counts as a read: the change is not sent until
// it succeeds.
func (c *Client) call(ctx context.Context, read bool, rpc func(context.Context, *grpc.ClientConn) error) error {
	var failed []EndpointFailure
	// Each pass connects to a later endpoint than the previous one, so there are at most
	// len(c.endpoints) passes.
	for from := 0; from < len(c.endpoints); {
		if err := c.connect(ctx, from); err != nil {
			var ce *ConnectError
			if !errors.As(err, &ce) {
				return err
			}
			return gaveUp(ctx, append(failed, ce.Tried...))
		}
		sent, err := c.attempt(ctx, rpc)
		if err == nil {
			return nil
		}
		endpoint := c.endpoints[c.at]
		se := serverAnswer(err)
		if se != nil && peerEndpoint(se) {
			return &PeerEndpointError{Endpoint: c.dialed[c.at].Endpoint, Message: se.Message}
		}
		if !read && sent {
			if se != nil && !outcomeUnknown(se) {
				return se
			}
			return &OutcomeUnknownError{Endpoint: endpoint, Err: answerOr(se, err)}
		}
		if se != nil && se.Code != codes.Unavailable {
			return se
		}
		// A read, or a change not sent: another member may answer what this one could not.
		failed = append(failed, EndpointFailure{Endpoint: endpoint, Reason: status.Convert(err).Message(), Answer: se})
		if ctx.Err() != nil || c.at == len(c.endpoints)-1 {
			for _, e := range c.endpoints[c.at+1:] {
				failed = append(failed, EndpointFailure{Endpoint: e, Reason: "not tried: no time left"})
			}
			return gaveUp(ctx, failed)
		}
		from = c.at + 1
		c.Close()
	}
	return gaveUp(ctx, failed)
}

// answerOr is the server's answer when there is one, else the transport's error.
func answerOr(se *ServerError, err error) error {
	if se != nil {
		return se
	}
	return err
}

// gaveUp is the error once no endpoint is left to ask, chosen by what happened rather than by
// which endpoint happened to be asked last: a member's answer that names the cause ("no
// leader", "server stopped") wins, since it is what the operator acts on; then a deadline that
// ran out, or a member's own timeout, is a *TimeoutError; only when nothing answered at all is
// it a *ConnectError. TLS failures stay a *ConnectError, whose TLS the caller looks for.
func gaveUp(ctx context.Context, tried []EndpointFailure) error {
	timedOut := ctx.Err() != nil
	for i := len(tried) - 1; i >= 0; i-- {
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

// attempt authenticates first when a user was given and no token is held yet, then runs rpc
// with the token. sent is false when rpc's request was not sent, or was refused for its token
// only, which the server checks before doing anything: such a request may be sent elsewhere.
// A token the server no longer knows (it expired, or the member restarted) is replaced once
// and the request sent again, as etcd's clients do.
func (c *Client) attempt(ctx context.Context, rpc func(context.Context, *grpc.ClientConn) error) (sent bool, err error) {
	if c.username != "" && !c.authed {
		if err := c.authenticate(ctx); err != nil {
			return false, err
		}
	}
	err = rpc(c.withToken(ctx), c.conn)
	if se := serverAnswer(err); c.username == "" || se == nil || !errors.Is(se, rpcerr.ErrInvalidAuthToken) {
		return true, err
	}
	if err := c.authenticate(ctx); err != nil {
		return false, err
	}
	return true, rpc(c.withToken(ctx), c.conn)
}

// authNotEnabled is etcd's answer to Authenticate when auth is off; its clients then go on
// without a token, and so does this one.
const authNotEnabled = "etcdserver: authentication is not enabled"

// authenticate asks the connected member for a token.
func (c *Client) authenticate(ctx context.Context) error {
	var a authenticateAnswer
	err := c.conn.Invoke(ctx, methodAuthenticate, authenticateRequest(c.username, c.password), &a)
	if se := serverAnswer(err); se != nil && (se.Message == authNotEnabled || se.Code == codes.Unimplemented) {
		// No auth on this server (clusterd has no Auth service): its TLS settings decide.
		c.authed, c.token = true, ""
		return nil
	}
	if err != nil {
		return err
	}
	c.authed, c.token = true, a.Token
	return nil
}

// withToken adds the auth token, if any, to the request's metadata under etcd's key.
func (c *Client) withToken(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, tokenKey, c.token)
}

// tokenKey is etcd's rpctypes.TokenFieldNameGRPC.
const tokenKey = "token"

// connect makes sure c.conn is connected to one of c.endpoints[from:].
func (c *Client) connect(ctx context.Context, from int) error {
	if c.conn != nil && c.at >= from {
		return nil
	}
	c.Close()
	limit := c.dialTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		limit = time.Until(d)
	}
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	conn, i, tried := c.dialFirst(dctx, from, "no answer within "+limit.Round(time.Millisecond).String())
	if conn == nil {
		return &ConnectError{Tried: tried}
	}
	c.conn, c.at = conn, from+i
	return nil
}

type dialResult struct {
	i      int
	conn   *grpc.ClientConn
	reason string
	tls    *clienttls.Error // set when TLS stopped the connection
}

// dialFirst connects to the first of eps that answers. It starts them in order, the next one
// as soon as the previous one failed or after staggerDelay, so a silent endpoint cannot use up
// the whole timeout, and a live endpoint early in the list is preferred. It returns the
// connection and its index, or nil and why each endpoint failed; silent is the reason given for
// an endpoint still silent when ctx ends.
func (c *Client) dialFirst(ctx context.Context, from int, silent string) (*grpc.ClientConn, int, []EndpointFailure) {
	eps := c.endpoints[from:]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan dialResult, len(eps))
	reasons := make([]string, len(eps))
	tlsErrs := make([]*clienttls.Error, len(eps))
	for i := range reasons {
		reasons[i] = silent
	}
	started, pending := 0, 0
	// A dial timeout shorter than staggerDelay per endpoint is shared out instead, so that a
	// silent endpoint cannot keep the later ones from being tried at all.
	delay := staggerDelay
	if d, ok := ctx.Deadline(); ok {
		delay = min(delay, time.Until(d)/time.Duration(len(eps)))
	}
	stagger := time.NewTimer(delay)
	defer stagger.Stop()
	start := func() {
		go func(i int) { results <- dial(ctx, i, eps[i], c.creds, c.dialed[from+i]) }(started)
		started++
		pending++
		stagger.Reset(delay)
	}
	start()
	// Every pass starts an attempt, collects one, or ends, so there are at most 2*len(eps).
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			if r.conn != nil {
				// Attempts still running see the cancelled context, fail, and close their
				// connection; one that won the race at the same moment is closed here.
				go func(n int) {
					for ; n > 0; n-- {
						if late := <-results; late.conn != nil {
							late.conn.Close()
						}
					}
				}(pending)
				return r.conn, r.i, nil
			}
			if r.reason != "" {
				reasons[r.i] = r.reason
			}
			tlsErrs[r.i] = r.tls
			if started < len(eps) {
				start()
			}
		case <-stagger.C:
			if started < len(eps) {
				start()
			}
		case <-ctx.Done():
			// The attempts end on the same context; their reasons are not waited for, since
			// the deadline is the reason.
			pending = 0
		}
	}
	// Every endpoint is named, also those the time ran out before.
	tried := make([]EndpointFailure, len(eps))
	for i := range tried {
		if i >= started {
			reasons[i] = "not tried: no time left"
		}
		tried[i] = EndpointFailure{Endpoint: eps[i], Reason: reasons[i], TLS: tlsErrs[i]}
	}
	return nil, 0, tried
}

// dial connects to one endpoint and waits until it can carry requests or has failed once. how says
// how, for explaining a TLS failure.
func dial(ctx context.Context, i int, addr string, creds credentials.TransportCredentials, how clienttls.Dialed) dialResult {
	var (
		mu      sync.Mutex
		lastErr error
		d       net.Dialer
	)
	// Dialing ourselves keeps the operating system's reason ("connection refused"), which grpc
	// only logs.
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) {
				err = op.Err
			}
			mu.Lock()
			lastErr = err
			mu.Unlock()
		}
		return conn, err
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(dialer),
		grpc.WithUserAgent("clusterctl"),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec{})),
		// A command makes a few calls and exits: no service config to look for (an endpoint
		// is a member, not a name to resolve), no idleness timer, and a write buffer sized for
		// requests of a few hundred bytes rather than grpc's 32 KiB. The read buffer keeps its
		// size: a snapshot arrives in full 16 KiB frames.
		grpc.WithDisableServiceConfig(),
		grpc.WithIdleTimeout(0),
		grpc.WithWriteBufferSize(16<<10),
	)
	if err != nil {
		return dialResult{i: i, reason: err.Error()}
	}
	conn.Connect()
	// Bounded by ctx: WaitForStateChange returns false once it is done.
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if s == connectivity.TransientFailure || !conn.WaitForStateChange(ctx, s) {
			var why error
			if s == connectivity.TransientFailure {
				why = connectionError(ctx, conn)
			}
			conn.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case lastErr != nil:
				return dialResult{i: i, reason: lastErr.Error()}
			case ctx.Err() != nil:
				// Silent until the deadline: the caller words that.
				return dialResult{i: i}
			}
			return failedHandshake(i, why, how)
		}
	}
	return dialResult{i: i, conn: conn}
}

// failedHandshake words a connection that reached the server and failed before HTTP/2 started:
// a TLS problem when clienttls recognises grpc-go's reason; a connection that ended under it (a
// member stopping or killed mid-handshake); else no gRPC server.
func failedHandshake(i int, why error, d clienttls.Dialed) dialResult {
	var te *clienttls.Error
	if why != nil && errors.As(clienttls.Explain(d, why), &te) {
		return dialResult{i: i, reason: te.Error(), tls: te}
	}
	if why != nil && connectionClosed(why.Error()) {
		return dialResult{i: i, reason: "the connection closed during the handshake (the member may have stopped)"}
	}
	return dialResult{i: i, reason: "not a gRPC server"}
}

// connectionClosed reports whether grpc-go's reason is the connection ending rather than
// something unexpected arriving on it.
func connectionClosed(msg string) bool {
	for _, s := range []string{"EOF", "connection reset by peer", "broken pipe", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// connectionError is why a connection in transient failure failed, as grpc-go reports it: a
// request on it fails at once with that reason, and nothing reaches the server.
func connectionError(ctx context.Context, conn *grpc.ClientConn) error {
	return conn.Invoke(ctx, methodMemberList, memberListRequest(false), &ignoredAnswer{})
}
