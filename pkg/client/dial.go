package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
)

// staggerDelay is how long an endpoint that neither answers nor fails holds up the next one.
// Refused connections fail at once and move on immediately; this only matters for an address
// that drops packets, which would otherwise use the whole dial timeout (RFC 8305 uses 250 ms for
// the same purpose).
const staggerDelay = 250 * time.Millisecond

// connect makes sure c.conn is connected to one of c.endpoints[from:].
func (c *Client) connect(ctx context.Context, from int) error {
	if c.conn != nil && c.at >= from {
		return nil
	}
	c.Close()
	limit := c.dialTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		// The caller's deadline comes first: dial under it rather than under a timer of the same
		// length, which could fire a moment before it and make a timeout look like a failure to
		// connect.
		limit = time.Until(d)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	conn, i, tried := c.dialFirst(ctx, from, "no answer within "+limit.Round(time.Millisecond).String())
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
	peer   bool             // set when the server is an etcd member's peer port
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
	// Every endpoint is named, also those the time runs out before.
	tried := make([]EndpointFailure, len(eps))
	for i := range tried {
		tried[i] = EndpointFailure{Endpoint: c.shown(from + i), Reason: silent}
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
		if started == len(eps) {
			return
		}
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
				tried[r.i].Reason = r.reason
			}
			tried[r.i].TLS, tried[r.i].Peer = r.tls, r.peer
			start()
		case <-stagger.C:
			start()
		case <-ctx.Done():
			// The attempts end on the same context; their reasons are not waited for, since
			// the deadline is the reason.
			pending = 0
		}
	}
	for i := started; i < len(eps); i++ {
		tried[i].Reason = "not tried: no time left"
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
			if op, ok := errors.AsType[*net.OpError](err); ok {
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
				// A request on a connection in transient failure fails at once with grpc-go's
				// reason for it, and nothing reaches the server.
				why = conn.Invoke(ctx, pb.Cluster_MemberList_FullMethodName, &pb.MemberListRequest{}, &pb.MemberListResponse{})
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
			r := failedHandshake(i, why, how)
			r.peer = r.reason == notGRPC && etcdPeerPort(ctx, addr, how)
			return r
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
	return dialResult{i: i, reason: notGRPC}
}

// notGRPC is why a connection that reached a server that does not speak gRPC failed.
const notGRPC = "not a gRPC server"

// peerProbeWithin bounds etcdPeerPort's request: the server answered a moment ago.
const peerProbeWithin = 500 * time.Millisecond

// etcdPeerPort reports whether the plain-HTTP server at addr is an etcd member's peer port, by
// the /version etcd serves there ({"etcdserver":...,"etcdcluster":...}): a peer URL given where
// a client URL belongs. clusterd's peer port speaks gRPC and is recognised by its answer
// instead (peerEndpoint). A TLS peer port is not asked: it wants a peer certificate.
func etcdPeerPort(ctx context.Context, addr string, how clienttls.Dialed) bool {
	if how.TLS {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), peerProbeWithin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/version", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var v struct {
		Server  string `json:"etcdserver"`
		Cluster string `json:"etcdcluster"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&v) == nil && v.Server != ""
}

// connectionClosed reports whether grpc-go's reason is the connection ending rather than
// something unexpected arriving on it.
func connectionClosed(msg string) bool {
	return slices.ContainsFunc([]string{"EOF", "connection reset by peer", "broken pipe", "use of closed network connection"},
		func(s string) bool { return strings.Contains(msg, s) })
}
