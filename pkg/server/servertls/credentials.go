package servertls

import (
	"context"
	"crypto/tls"
	"net"

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
