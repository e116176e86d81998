package clienttls

import (
	"fmt"
	"strings"
)

// Kind is what went wrong, for the exit code.
type Kind int

const (
	UnknownAuthority   Kind = iota + 1 // the server's certificate: pass --cacert
	NameMismatch                       // the server's certificate does not name the endpoint
	Expired                            // the server's certificate has expired
	NotYetValid                        // the server's certificate is not valid yet
	ClientCertRequired                 // the server wants a client certificate: pass --cert and --key
	ClientCertRejected                 // the server refused the client certificate given
	TLSToPlain                         // TLS was dialed, the server speaks plain gRPC
	PlainToTLS                         // plain gRPC was dialed, the server speaks TLS
)

// Dialed is how an endpoint was reached, which decides what an ambiguous close means.
type Dialed struct {
	Endpoint   string // as the user wrote it: https://10.0.0.1:2379, 10.0.0.1:2379
	TLS        bool
	ClientCert bool // a client certificate was configured (--cert and --key)
}

// Error is a TLS problem with one endpoint.
type Error struct {
	Endpoint string
	Kind     Kind
	Detail   string // the part of grpc-go's message that says why, e.g. the x509 text
}

func (e *Error) Error() string {
	hostPort := e.Endpoint
	if _, rest, ok := strings.Cut(e.Endpoint, "://"); ok {
		hostPort = rest
	}
	var what, todo string
	switch e.Kind {
	case UnknownAuthority:
		what, todo = "the server's certificate is signed by an unknown authority", "pass --cacert with the CA that signed it"
	case NameMismatch:
		what, todo = "the server's certificate does not name this address", "use an endpoint address that the certificate names"
	case Expired:
		what, todo = "the server's certificate has expired", "renew the server's certificate"
	case NotYetValid:
		what, todo = "the server's certificate is not valid yet", "check the clocks of this machine and of the server"
	case ClientCertRequired:
		what, todo = "the server requires a client certificate", "pass --cert and --key"
	case ClientCertRejected:
		what, todo = "the server refused the client certificate", "pass --cert and --key that the server's client CA signed and that have not expired"
	case TLSToPlain:
		what, todo = "the server does not speak TLS", "use http://"+hostPort
	case PlainToTLS:
		what, todo = "the server expects TLS", "use https://"+hostPort+" with --cacert (and --cert and --key if it asks for a client certificate)"
	}
	if e.Detail != "" {
		what += " (" + e.Detail + ")"
	}
	return fmt.Sprintf("%s: %s: %s", e.Endpoint, what, todo)
}

// Explain turns the error of a dial or an RPC to d into an *Error when it is a TLS problem it
// knows, and returns err unchanged otherwise.
func Explain(d Dialed, err error) error {
	if err == nil {
		return nil
	}
	kind, detail := classify(d, err.Error())
	if kind == 0 {
		return err
	}
	return &Error{Endpoint: d.Endpoint, Kind: kind, Detail: detail}
}

// classify reads grpc-go's message. The texts are crypto/tls's and crypto/x509's, which grpc-go
// passes through after "authentication handshake failed: " or "error reading server preface: ".
func classify(d Dialed, msg string) (Kind, string) {
	if i := strings.Index(msg, "x509: "); i >= 0 {
		detail := strings.TrimRight(msg[i:], `"`)
		switch {
		case strings.Contains(detail, "signed by unknown authority"):
			return UnknownAuthority, ""
		case strings.Contains(detail, "has expired or is not yet valid"):
			if strings.Contains(detail, " is before ") {
				return NotYetValid, detail
			}
			return Expired, detail
		case strings.Contains(detail, "certificate is valid for"),
			strings.Contains(detail, "cannot validate certificate for"),
			strings.Contains(detail, "certificate is not valid for any names"),
			strings.Contains(detail, "legacy Common Name field"):
			return NameMismatch, detail
		}
		return 0, ""
	}
	if strings.Contains(msg, "first record does not look like a TLS handshake") {
		return TLSToPlain, ""
	}
	if i := strings.Index(msg, "remote error: tls: "); i >= 0 && d.TLS {
		alert := strings.TrimRight(msg[i:], `"`)
		switch {
		case strings.Contains(alert, "certificate required"):
			return ClientCertRequired, ""
		case strings.Contains(alert, "bad certificate"), strings.Contains(alert, "unknown certificate"),
			strings.Contains(alert, "expired certificate"), strings.Contains(alert, "revoked certificate"),
			strings.Contains(alert, "unsupported certificate"), strings.Contains(alert, "access denied"),
			strings.Contains(alert, "handshake failure"):
			// TLS 1.2 servers answer a missing client certificate with a handshake failure.
			return clientCertProblem(d), alert
		}
		return 0, ""
	}
	if closedEarly(msg) {
		if d.TLS {
			return clientCertProblem(d), "the server closed the connection after the TLS handshake"
		}
		return PlainToTLS, "the server closed the connection at the HTTP/2 preface"
	}
	return 0, ""
}

func clientCertProblem(d Dialed) Kind {
	if d.ClientCert {
		return ClientCertRejected
	}
	return ClientCertRequired
}

// closedEarly is a connection the server closed before speaking HTTP/2: a TLS server reading a
// plain preface, or a TLS 1.3 server that refused the client certificate after the client had
// finished its side of the handshake. It is only ever a connection error: an RPC failing
// mid-stream is reported by grpc-go otherwise.
func closedEarly(msg string) bool {
	if strings.Contains(msg, "write: broken pipe") || strings.Contains(msg, "write: connection reset by peer") {
		return true
	}
	i := strings.Index(msg, "error reading server preface: ")
	if i < 0 {
		return false
	}
	rest := msg[i:]
	return strings.Contains(rest, "EOF") || strings.Contains(rest, "connection reset by peer")
}
