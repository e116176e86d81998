package portmux

import (
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// tlsSplit is what a mux over a TLS listener needs: the config it terminates TLS with and where
// refused handshakes are reported.
type tlsSplit struct {
	cfg     *tls.Config
	refused func(remote string, err error)
	// offers holds, for each connection in its handshake, whether its client offered HTTP/1.1
	// by ALPN: the ClientHello is seen only inside the handshake, by the one config all
	// connections share (a config per connection would each have their own session ticket keys).
	offers sync.Map // net.Conn -> *bool
}

// NewTLS splits l as New does, after terminating TLS with cfg on each connection. refused (which
// may be nil) is told every failed handshake with the remote address. cfg is cloned: its
// certificate callbacks and verification stay as they are, and ALPN offers "h2" and
// "http/1.1".
//
// A client that negotiates "h2" and does not offer "http/1.1" (every gRPC client: grpc-go offers
// "h2" alone, gRPC's C core and Java "grpc-exp" and "h2") goes to GRPC as a *tls.Conn whose
// handshake is done. Every other connection goes to HTTP, also as a *tls.Conn: an HTTP/1.1 one,
// one without ALPN, and an HTTP client that offers both ("h2" first, as curl, browsers and
// Prometheus do), which gets "h2": its server should serve HTTP/2 too, and hand HTTP/2 gRPC
// requests on to gRPC (SplitHTTP2), for the rare gRPC client that offers HTTP/1.1 as well.
func NewTLS(l net.Listener, timeout time.Duration, cfg *tls.Config, refused func(remote string, err error)) *Mux {
	m := New(l, timeout)
	t := &tlsSplit{refused: refused}
	t.cfg = cfg.Clone()
	t.cfg.NextProtos = []string{"h2", "http/1.1"}
	next := cfg.GetConfigForClient
	t.cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if p, ok := t.offers.Load(hello.Conn); ok {
			*p.(*bool) = slices.Contains(hello.SupportedProtos, "http/1.1")
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	m.tls = t
	return m
}

// handshake terminates TLS on c within timeout and reports whether it is gRPC's.
func (t *tlsSplit) handshake(c net.Conn, timeout time.Duration) (*tls.Conn, bool, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, false, err
	}
	offersHTTP1 := new(bool)
	t.offers.Store(c, offersHTTP1)
	tc := tls.Server(c, t.cfg)
	err := tc.Handshake()
	t.offers.Delete(c)
	if err != nil {
		if t.refused != nil {
			t.refused(c.RemoteAddr().String(), err)
		}
		return nil, false, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, false, err
	}
	return tc, tc.ConnectionState().NegotiatedProtocol == "h2" && !*offersHTTP1, nil
}

// SplitHTTP2 serves the HTTP side of a TLS mux: gRPC requests (HTTP/2 with a content type of
// application/grpc) go to grpcHandler (a grpc.Server's ServeHTTP, the way etcd serves its TLS
// client port), everything else to next.
func SplitHTTP2(grpcHandler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			grpcHandler.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
