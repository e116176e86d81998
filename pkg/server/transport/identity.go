package transport

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/logfmt"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// sender is who made a peer call, as the connection shows it: the remote address and, over peer
// TLS with client certificates, the certificate the peer CA verified.
type sender struct {
	addr string
	leaf *x509.Certificate
}

func senderOf(ctx context.Context) sender {
	var s sender
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return s
	}
	if p.Addr != nil {
		s.addr = p.Addr.String()
	}
	if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 && len(info.State.VerifiedChains[0]) > 0 {
		s.leaf = info.State.VerifiedChains[0][0]
	}
	return s
}

func (s sender) cn() string {
	if s.leaf == nil {
		return ""
	}
	return s.leaf.Subject.CommonName
}

// errNotVouched refuses a message whose connection's certificate does not speak for its sender.
var errNotVouched = errors.New("the connection's certificate speaks for none of the sender's peer URLs: it covers none of their hosts (a unix socket URL has none), and neither --peer-cert-allowed-cn nor --peer-cert-allowed-hostname names it")

// vouch checks that a call over from's connection may speak for member id, whose peer URLs are
// urls: one of them must be one the connection's certificate speaks for (speaksFor). Without a
// certificate (a plain peer URL, or TLS without client certificates) nothing binds the
// connection to a member: the call is taken as the sender says, as etcd does; docs/security.md
// says what that allows.
func (t *Transport) vouch(from sender, id membership.ID, urls []string) error {
	if from.leaf == nil || slices.ContainsFunc(urls, func(u string) bool { return t.speaksFor(from.leaf, u) }) {
		return nil
	}
	return fmt.Errorf("member %s: %w", id, errNotVouched)
}

// speaksFor reports whether a verified peer certificate speaks for peer URL u:
//   - with a CN in --peer-cert-allowed-cn, for any URL;
//   - with --peer-cert-allowed-hostname, which the handshake checked the certificate against,
//     for any URL with a host;
//   - else for a URL whose host it covers (an IP or DNS SAN, as a client checks a server).
//
// A unix socket URL names no host, which no SAN can cover: only an allowed CN speaks for it.
func (t *Transport) speaksFor(leaf *x509.Certificate, u string) bool {
	if slices.Contains(t.cfg.PeerAllowedCNs, leaf.Subject.CommonName) {
		return true
	}
	host := hostOf(u)
	if host == "" {
		return false
	}
	return len(t.cfg.PeerAllowedHostnames) > 0 || leaf.VerifyHostname(host) == nil
}

// hostOf is the host a peer URL is dialed at; "" for a unix socket, or a URL that does not parse.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || strings.HasPrefix(p.Scheme, "unix") {
		return ""
	}
	return p.Hostname()
}

// dialable are the peer URLs a stream names at which this member may dial back a sender its
// membership does not list (answerSender): never a unix socket, whose path is whatever the
// sender chose on this member's own machine, and over peer TLS with a client certificate only
// the URLs that certificate speaks for. A plain sender is dialed where it says, as etcd dials
// a request's X-PeerURLs.
func (t *Transport) dialable(from sender, urls []string) []string {
	return slices.DeleteFunc(slices.Clone(urls), func(u string) bool {
		return hostOf(u) == "" || from.leaf != nil && !t.speaksFor(from.leaf, u)
	})
}

// Vouched checks that a call on the peer port comes from a member, where TLS can tell: with a
// client certificate, it must speak for a peer URL of a member of the applied membership
// (speaksFor). A forwarded membership change is such a call: without
// the check, any certificate the peer CA signed could change the membership, whatever
// --admin-cert-allowed-cn allows on the client port.
func (t *Transport) Vouched(ctx context.Context) error {
	from := senderOf(ctx)
	if from.leaf == nil {
		return nil
	}
	var urls []string
	for _, m := range t.h.Cluster().Members {
		urls = append(urls, m.PeerURLs...)
	}
	if len(urls) == 0 {
		return nil
	}
	if err := t.vouch(from, 0, urls); err != nil {
		t.ignored.log("refused a peer call from a certificate that speaks for no member", from, "err", err.Error())
		return errNotVouched
	}
	return nil
}

// vouchStream checks a raft stream's sender: a member at its peer URLs in the membership, and a
// sender the membership does not list (yet) at the peer URLs its stream names.
func (t *Transport) vouchStream(ctx context.Context, from sender, id membership.ID) error {
	if m := t.h.Cluster().Member(id); m != nil {
		return t.vouch(from, id, m.PeerURLs)
	}
	return t.vouch(from, id, streamPeerURLs(ctx))
}

// streamPeerURLs are the peer URLs a raft stream names for its sender (wire.PeerURLs).
func streamPeerURLs(ctx context.Context) []string {
	md, _ := metadata.FromIncomingContext(ctx)
	var urls []string
	for _, v := range md.Get(wire.PeerURLs) {
		urls = append(urls, membership.SplitURLs(v)...)
	}
	return urls
}

// ignoredInterval is how often the same peer is logged again for the same kind of notice or
// message this member refused or ignored.
const ignoredInterval = time.Minute

// maxIgnored bounds what ignoredLog remembers: a flood from many addresses must not grow it.
const maxIgnored = 1024

// ignoredLog logs the notices and messages a member refuses or ignores, at most once per
// interval for each kind, remote host and certificate CN, with how many were not logged since:
// a forger must be seen, and must not be able to fill the log.
type ignoredLog struct {
	logger *slog.Logger
	limit  *logfmt.Limiter
}

func newIgnoredLog(logger *slog.Logger, every time.Duration) *ignoredLog {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ignoredLog{logger: logger, limit: logfmt.NewLimiter(every, maxIgnored)}
}

func (l *ignoredLog) log(msg string, from sender, attrs ...any) {
	host := from.addr
	if h, _, err := net.SplitHostPort(from.addr); err == nil {
		host = h
	}
	ok, suppressed := l.limit.Allow(msg+"|"+host+"|"+from.cn(), time.Now())
	if !ok {
		return
	}
	attrs = append(attrs, "remote-addr", from.addr)
	if cn := from.cn(); cn != "" {
		attrs = append(attrs, "cn", cn)
	}
	if suppressed > 0 {
		attrs = append(attrs, "not-logged-since", suppressed)
	}
	l.logger.Warn(msg, attrs...)
}
