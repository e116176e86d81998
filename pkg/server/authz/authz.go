package authz

import (
	"context"
	"crypto/x509"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/clusterctl/clusterctl/pkg/server/servertls"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// Flag is the setting's name, in etcd's style: like --peer-cert-allowed-cn, the CNs of the
// certificates allowed something, here the admin operations on the client port.
const Flag = "--admin-cert-allowed-cn"

// openMethods are the methods of etcd's admin-bearing services that every authenticated client
// may call: reading the membership and a member's status.
var openMethods = map[string]bool{
	"/etcdserverpb.Cluster/MemberList": true,
	"/etcdserverpb.Maintenance/Status": true,
	// etcdctl endpoint health reads the alarm list; clusterd raises none and refuses the rest.
	"/etcdserverpb.Maintenance/Alarm": true,
	// clusterd's membership history: whoever may list the members may read who changed them.
	wire.HistoryList: true,
}

// adminServices are the services whose other methods are admin operations.
var adminServices = []string{"/etcdserverpb.Cluster/", "/etcdserverpb.Maintenance/"}

// IsAdmin reports whether fullMethod ("/etcdserverpb.Cluster/MemberAdd") is an admin
// operation. A dry run of a membership change is one: it is allowed to whoever may make the
// change, and tells no one else how the cluster would take it.
func IsAdmin(fullMethod string) bool {
	if openMethods[fullMethod] {
		return false
	}
	if fullMethod == wire.DryRunCheck {
		return true
	}
	for _, s := range adminServices {
		if strings.HasPrefix(fullMethod, s) {
			return true
		}
	}
	return false
}

// CheckSetting is for the config validation: the list means something only when the client
// port verifies client certificates.
func CheckSetting(allowedCNs []string, clientCertAuth bool) error {
	if len(allowedCNs) > 0 && !clientCertAuth {
		return &servertls.SettingError{Flag: Flag, Msg: "needs --client-cert-auth: without client certificates there is no CN to check"}
	}
	return nil
}

// Interceptors check each call, unary (the membership changes, MoveLeader) or streaming
// (Snapshot): an admin operation (IsAdmin) is allowed to the certificates whose CN is in
// allowedCNs, or to every caller when it is empty, and refused otherwise with etcd's permission
// denied.
func Interceptors(allowedCNs []string) []grpc.ServerOption {
	allowed := slices.Clone(allowedCNs)
	allow := func(ctx context.Context, fullMethod string) error {
		if len(allowed) == 0 || !IsAdmin(fullMethod) {
			return nil
		}
		if leaf := verifiedLeaf(ctx); leaf != nil && slices.Contains(allowed, leaf.Subject.CommonName) {
			return nil
		}
		return rpctypes.ErrGRPCPermissionDenied
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := allow(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := allow(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return handler(srv, ss)
		}),
	}
}

// VerifiedCN is the CN of the client's certificate as crypto/tls verified it, or "" when the
// client gave none or it was not verified (no --client-cert-auth).
func VerifiedCN(ctx context.Context) string {
	if leaf := verifiedLeaf(ctx); leaf != nil {
		return leaf.Subject.CommonName
	}
	return ""
}

// verifiedLeaf is the client's certificate as crypto/tls verified it, or nil.
func verifiedLeaf(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}
