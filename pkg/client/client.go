package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// staggerDelay is how long an endpoint that neither answers nor fails holds up the next one.
// Refused connections fail at once and move on immediately; this only matters for an address
// that drops packets, which would otherwise use the whole dial timeout (RFC 8305 uses 250 ms for
// the same purpose).
const staggerDelay = 250 * time.Millisecond

// Config is what a Client needs to reach a cluster.
type Config struct {
	// Endpoints are client addresses, "host:port" or "http://host:port", in order of preference.
	Endpoints []string
	// DialTimeout bounds connecting, over all endpoints together.
	DialTimeout time.Duration
}

// Client is a connection to one member of a cluster, made on first use.
type Client struct {
	endpoints   []string // host:port, in order of preference
	dialTimeout time.Duration

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
	eps := make([]string, len(cfg.Endpoints))
	for i, e := range cfg.Endpoints {
		addr, err := parseEndpoint(e)
		if err != nil {
			return nil, err
		}
		eps[i] = addr
	}
	return &Client{endpoints: eps, dialTimeout: cfg.DialTimeout}, nil
}

// parseEndpoint accepts etcdctl's endpoint forms that need no TLS.
func parseEndpoint(e string) (string, error) {
	addr := strings.TrimPrefix(e, "http://")
	if strings.Contains(addr, "://") {
		return "", fmt.Errorf("endpoint %q: only host:port or http://host:port is supported", e)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("endpoint %q: %v", e, err)
	}
	return addr, nil
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
// attempt may have been applied.
func (c *Client) call(ctx context.Context, read bool, rpc func(context.Context, *grpc.ClientConn) error) error {
	var failed []EndpointFailure
	// Each pass connects to a later endpoint than the previous one, so there are at most
	// len(c.endpoints) passes.
	for from := 0; from < len(c.endpoints); {
		if err := c.connect(ctx, from); err != nil {
			var ce *ConnectError
			if errors.As(err, &ce) {
				ce.Tried = append(failed, ce.Tried...)
			}
			return err
		}
		err := rpc(ctx, c.conn)
		if err == nil {
			return nil
		}
		endpoint := c.endpoints[c.at]
		se := serverAnswer(err)
		if se != nil && outcomeUnknown(se) {
			return &OutcomeUnknownError{Endpoint: endpoint, Err: se}
		}
		if !read {
			if se != nil {
				return se
			}
			return &OutcomeUnknownError{Endpoint: endpoint, Err: err}
		}
		if se != nil && se.Code != codes.Unavailable {
			return se
		}
		if ctx.Err() != nil {
			// The read was sent and the member did not answer in time: that is no connection
			// failure, and no other member can be asked any more.
			return &OutcomeUnknownError{Endpoint: endpoint, Err: err}
		}
		// A read: another member may answer what this one could not.
		reason := status.Convert(err).Message()
		failed = append(failed, EndpointFailure{endpoint, reason})
		if ctx.Err() != nil || c.at == len(c.endpoints)-1 {
			if se != nil {
				// The last member's own answer says more than "no endpoint answered".
				return se
			}
			return &ConnectError{Tried: failed}
		}
		from = c.at + 1
		c.Close()
	}
	return &ConnectError{Tried: failed}
}

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
	conn, i, tried := dialFirst(dctx, c.endpoints[from:], "no answer within "+limit.Round(time.Millisecond).String())
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
}

// dialFirst connects to the first of eps that answers. It starts them in order, the next one
// as soon as the previous one failed or after staggerDelay, so a silent endpoint cannot use up
// the whole timeout, and a live endpoint early in the list is preferred. It returns the
// connection and its index, or nil and why each endpoint failed; silent is the reason given for
// an endpoint still silent when ctx ends.
func dialFirst(ctx context.Context, eps []string, silent string) (*grpc.ClientConn, int, []EndpointFailure) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan dialResult, len(eps))
	reasons := make([]string, len(eps))
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
		go func(i int) { results <- dial(ctx, i, eps[i]) }(started)
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
	tried := make([]EndpointFailure, started)
	for i := range tried {
		tried[i] = EndpointFailure{eps[i], reasons[i]}
	}
	return nil, 0, tried
}

// dial connects to one endpoint and waits until it can carry requests or has failed once.
func dial(ctx context.Context, i int, addr string) dialResult {
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
		grpc.WithTransportCredentials(insecure.NewCredentials()),
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
			conn.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case lastErr != nil:
				return dialResult{i: i, reason: lastErr.Error()}
			case ctx.Err() != nil:
				// Silent until the deadline: the caller words that.
				return dialResult{i: i}
			default:
				return dialResult{i: i, reason: "not a gRPC server"}
			}
		}
	}
	return dialResult{i: i, conn: conn}
}
