package servertls

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"google.golang.org/grpc/credentials"
)

// Credentials are gRPC's TLS credentials over cfg that report every refused handshake to
// refusals, on the serving side (with the remote address) and on the dialing side (with the
// peer's address). Handshakes and the AuthInfo they yield are grpc-go's own, so
// peer.FromContext gives a credentials.TLSInfo with the verified chains as usual.
func Credentials(cfg *tls.Config, refusals *Refusals) credentials.TransportCredentials {
	return &refusingCreds{TransportCredentials: credentials.NewTLS(cfg), refusals: refusals}
}

type refusingCreds struct {
	credentials.TransportCredentials
	refusals *Refusals
}

func (c *refusingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil && c.refusals != nil {
		c.refusals.Refused(authority, err)
	}
	return conn, info, err
}

func (c *refusingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil && c.refusals != nil {
		c.refusals.Refused(raw.RemoteAddr().String(), err)
	}
	return conn, info, err
}

func (c *refusingCreds) Clone() credentials.TransportCredentials {
	return &refusingCreds{TransportCredentials: c.TransportCredentials.Clone(), refusals: c.refusals}
}

// Terminated are the server credentials of a gRPC server whose connections come with TLS
// already terminated, by a multiplexer that shares the port with HTTP (portmux.NewTLS, with the
// config and the Refusals these Credentials would have used). ServerHandshake takes the
// *tls.Conn as it is and gives the AuthInfo grpc-go's own TLS credentials give:
// credentials.TLSInfo with the connection's state, so the verified chains are where the admin
// authorization reads them. Anything but a handshaken *tls.Conn is refused. They cannot dial.
func Terminated() credentials.TransportCredentials { return terminated{} }

type terminated struct{}

func (terminated) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, ok := raw.(*tls.Conn)
	if !ok {
		return nil, nil, fmt.Errorf("servertls: a %T where a TLS connection was expected", raw)
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete {
		return nil, nil, errors.New("servertls: the TLS handshake of the connection is not done")
	}
	info := credentials.TLSInfo{State: st, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	info.SPIFFEID = spiffeID(st)
	return tc, info, nil
}

func (terminated) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("servertls: Terminated credentials only serve")
}

func (terminated) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2"}
}

func (t terminated) Clone() credentials.TransportCredentials { return t }

func (terminated) OverrideServerName(string) error { return nil }

// spiffeID is the leaf's SPIFFE ID as grpc-go's TLS credentials fill it in: the one URI SAN
// with the spiffe scheme, or nil when there is none or more than one.
func spiffeID(st tls.ConnectionState) *url.URL {
	if len(st.PeerCertificates) == 0 {
		return nil
	}
	var id *url.URL
	for _, u := range st.PeerCertificates[0].URIs {
		if u == nil || !strings.EqualFold(u.Scheme, "spiffe") {
			continue
		}
		if id != nil {
			return nil
		}
		id = u
	}
	return id
}
