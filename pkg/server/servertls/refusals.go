package servertls

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/clusterctl/clusterctl/pkg/server/logfmt"
)

// maxRemembered bounds the memory of Refusals: a scan from many addresses must not grow it
// without limit (logfmt.Limiter).
const maxRemembered = 4096

// Refusals logs refused TLS handshakes at most once per peer and interval. A peer is the
// remote host (without the port, which changes on every attempt) and the identity of the
// certificate it showed, or the kind of failure when there was none, so a peer that comes back
// with another certificate is logged again.
type Refusals struct {
	logger *slog.Logger
	port   string
	now    func() time.Time
	limit  *logfmt.Limiter
}

// NewRefusals logs to logger, naming the port ("client" or "peer"), each peer at most once
// per every; every <= 0 logs each peer once for the life of the process.
func NewRefusals(logger *slog.Logger, port string, every time.Duration) *Refusals {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Refusals{logger: logger, port: port, now: time.Now, limit: logfmt.NewLimiter(every, maxRemembered)}
}

// Refused records a handshake with remote that failed with err, and logs it unless this peer
// was logged within the interval. A connection closed during the handshake is not logged: TCP
// health checks and port scans do that all day.
func (r *Refusals) Refused(remote string, err error) {
	if err == nil || benign(err) {
		return
	}
	host := remote
	if h, _, splitErr := net.SplitHostPort(remote); splitErr == nil {
		host = h
	}
	leaf := presented(err)
	id := kind(err)
	if leaf != nil {
		sum := sha256.Sum256(leaf.Raw)
		id = hex.EncodeToString(sum[:8])
	}
	ok, suppressed := r.limit.Allow(host+"|"+id, r.now())
	if !ok {
		return
	}

	attrs := []any{"port", r.port, "remote-addr", remote}
	if leaf != nil {
		attrs = append(attrs, "cn", leaf.Subject.CommonName, "issuer", leaf.Issuer.CommonName, "fingerprint", id)
	}
	attrs = append(attrs, "error", err.Error())
	if suppressed > 0 {
		attrs = append(attrs, "not-logged-since", suppressed)
	}
	r.logger.Warn("rejected connection", attrs...)
}

// presented is the leaf certificate the peer showed, when the error carries it.
func presented(err error) *x509.Certificate {
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) && len(verr.UnverifiedCertificates) > 0 {
		return verr.UnverifiedCertificates[0]
	}
	var nerr *NotAllowedError
	if errors.As(err, &nerr) {
		return nerr.Cert
	}
	return nil
}

// kind names a failure without a certificate. Never the error text itself: an expiry message
// carries the current time and would make every attempt a new peer.
func kind(err error) string {
	var rec tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &rec):
		return "not-tls"
	case errors.As(err, &alert):
		return "alert-" + alert.Error()
	case strings.Contains(err.Error(), "didn't provide a certificate"):
		return "no-certificate"
	}
	return "handshake"
}

func benign(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.Canceled)
}
