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
var errNotVouched = errors.New("the connection's certificate covers none of the sender's peer URL hosts, and its CN is not in --peer-cert-allowed-cn")

// vouch checks that a call over from's connection may speak for member id, whose peer URLs are
// urls. Over peer TLS with a client certificate, the certificate must cover the host of one of
// those URLs (an IP or DNS SAN, as a client checks a server), or its CN be in
// --peer-cert-allowed-cn. Without a certificate (a plain peer URL, or TLS without client
// certificates) nothing binds the connection to a member: the call is taken as the sender says,
// as etcd does; docs/security.md says what that allows. A member whose URLs name no host (unix
// sockets, on this machine only) is vouched for by any certificate the peer CA signed.
func (t *Transport) vouch(from sender, id membership.ID, urls []string) error {
	if from.leaf == nil || slices.Contains(t.cfg.PeerAllowedCNs, from.leaf.Subject.CommonName) {
		return nil
	}
	if len(urls) == 0 {
		// A sender that names no URL of its own is no member a certificate could speak for.
		return fmt.Errorf("member %s: %w", id, errNotVouched)
	}
	hosts := 0
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || p.Hostname() == "" {
			continue
		}
		hosts++
		if from.leaf.VerifyHostname(p.Hostname()) == nil {
			return nil
		}
	}
	if hosts == 0 {
		return nil
	}
	return fmt.Errorf("member %s: %w", id, errNotVouched)
}

// Vouched checks that a call on the peer port comes from a member, where TLS can tell: with a
// client certificate, it must cover the host of a peer URL of a member of the applied membership,
// or have a CN in --peer-cert-allowed-cn. A forwarded membership change is such a call: without
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
