package command

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/contexts"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
	"google.golang.org/grpc/codes"
)

func TestExitCode(t *testing.T) {
	server := func(c codes.Code, msg string) error { return &client.ServerError{Code: c, Message: msg} }
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"bad arguments", &usageError{errNoName}, 128},
		{"cannot connect", &client.ConnectError{Tried: []client.EndpointFailure{{Endpoint: "127.0.0.1:2379", Reason: "connect: connection refused"}}}, 2},
		{"member not found", rpcerr.ErrMemberNotFound, 10},
		{"name not found", &client.NotFoundError{Ref: "infra9"}, 10},
		{"peer URLs exist", rpcerr.ErrPeerURLExists, 11},
		{"member ID exists", rpcerr.ErrMemberIDExists, 11},
		{"member name exists", rpcerr.ErrMemberNameExists, 11},
		{"not enough started", rpcerr.ErrNotEnoughStartedMembers, 12},
		{"not enough started, as etcd sends it", server(codes.Unknown, "etcdserver: re-configuration failed due to not enough started members"), 12},
		{"unhealthy cluster", rpcerr.ErrUnhealthyCluster, 12},
		{"member prune keeps a voter for quorum", quorumAfter([]client.Member{{ID: 1}, {ID: 2}}, client.Member{ID: 2}, nil), 12},
		{"member replace under a live member's name", fmt.Errorf("member infra1 (…) still answers: … (%w)", rpcerr.ErrMemberNameExists), 11},
		{"name not found, unstarted members listed", &client.NotFoundError{Ref: "infra3", Unstarted: []client.Member{{ID: 3}}}, 10},
		{"etcd's peer port as the endpoint", &client.PeerEndpointError{Endpoint: "127.0.0.1:2380", Message: "it answers etcd's peer /version"}, 128},
		{"learner not ready", rpcerr.ErrLearnerNotReady, 13},
		{"server timeout", &client.OutcomeUnknownError{Endpoint: "a:1", Err: rpcerr.ErrTimeout}, 14},
		{"connection lost after sending", &client.OutcomeUnknownError{Endpoint: "a:1", Err: errors.New("EOF")}, 14},
		{"leader changed while proposing", &client.OutcomeUnknownError{Endpoint: "a:1", Err: server(codes.Unavailable, "etcdserver: leader changed")}, 14},
		{"no leader", rpcerr.ErrNoLeader, 15},
		{"server stopped", rpcerr.ErrStopped, 15},
		{"ambiguous name", &client.AmbiguousNameError{Name: "x", IDs: []uint64{1, 2}}, 16},
		{"learner limit", rpcerr.ErrTooManyLearners, 17},
		{"dry run against etcd", &client.DryRunUnsupportedError{Endpoint: "a:1"}, 18},
		{"membership history against etcd", &client.HistoryUnsupportedError{Endpoint: "a:1", Version: "3.7.1"}, 32},
		{"corrupt snapshot file", fmt.Errorf("status: %w", datadir.ErrChecksum), 19},
		{"no snapshot file", &datadir.NoSnapshotFileError{Path: "x.db"}, 128},
		{"data dir not empty", &datadir.NotEmptyError{Dir: "d"}, 128},
		{"token clash", &datadir.TokenClashError{Token: "t", ClusterID: 1}, 128},
		{"name not in initial cluster", &datadir.NameNotInClusterError{Name: "c"}, 128},
		{"advertised URLs differ", &datadir.PeerURLsMismatchError{Name: "a"}, 128},
		{"corrupt snapshot received", client.ErrSnapshotChecksum, 19},
		{"snapshot stream broke", &client.SnapshotStreamError{Endpoint: "a:1", Received: 10, Err: errors.New("EOF")}, 1},
		{"TLS stopped the only endpoint", &client.ConnectError{Tried: []client.EndpointFailure{{Endpoint: "a:1", TLS: &clienttls.Error{Endpoint: "https://a:1", Kind: clienttls.UnknownAuthority}}}}, 20},
		{"TLS stopped one endpoint, the other was down", &client.ConnectError{Tried: []client.EndpointFailure{
			{Endpoint: "a:1", Reason: "connect: connection refused"},
			{Endpoint: "b:1", TLS: &clienttls.Error{Endpoint: "https://b:1", Kind: clienttls.ClientCertRequired}}}}, 20},
		{"TLS error alone", &clienttls.Error{Endpoint: "https://a:1", Kind: clienttls.PlainToTLS}, 20},
		{"bad TLS file", &usageError{&clienttls.ArgError{Flag: "--cacert", Msg: "x: no such file"}}, 128},
		{"discovery token in use", &TokenInUseError{Token: "t", Keys: 1}, 11},
		{"discovery token without a size", &registry.NoTokenError{Token: "t", Err: registry.ErrSizeNotFound}, 10},
		{"discovery token with a bad size", &registry.NoTokenError{Token: "t", Err: registry.ErrBadSizeKey}, 1},
		{"permission denied", rpcerr.ErrPermissionDenied, 21},
		{"authentication failed", rpcerr.ErrAuthFailed, 22},
		{"auth required", rpcerr.ErrUserEmpty, 23},
		{"user not found", rpcerr.ErrUserNotFound, 23},
		{"endpoints did not answer", &endpointsError{failed: 1, total: 3}, 29},
		{"cluster degraded", &DegradedError{Clusters: 1, Degraded: []string{"cluster 1: no leader"}}, 33},
		{"clusters degraded", &DegradedError{Clusters: 3, Degraded: []string{"a: did not answer"}}, 33},
		{"new member not serving", &notServingError{name: "m4", id: 4, wait: time.Minute, err: errors.New("still a learner")}, 35},
		{"split", &client.SplitError{Why: "two leaders in term 3", Groups: []client.Group{{Leader: 1}, {Leader: 2}}}, 34},
		{"contexts file unwritable", &client.LocalWriteError{Path: "c.yaml", Err: syscall.ENOSPC}, 30},
		{"no current context", &noCurrentContextError{path: "c.yaml"}, 10},
		{"unknown context", &usageError{&contexts.UnknownContextError{Name: "x", Path: "c.yaml"}}, 128},
		{"endpoints unhealthy", &endpointsError{failed: 1, total: 3, unhealthy: true}, 26},
		{"bad leader transferee", rpcerr.ErrBadLeaderTransferee, 27},
		{"move-leader to a follower", rpcerr.ErrNotLeader, 28},
		{"leader transfer timed out", &client.OutcomeUnknownError{Endpoint: "a:1", Err: rpcerr.ErrLeaderTransferTimedOut}, 14},
		{"promote of a voter", rpcerr.ErrMemberNotLearner, 1},
		{"invalid peer URLs", rpcerr.ErrInvalidPeerURLs, 1},
		{"cluster ID mismatch", rpcerr.ErrClusterIDMismatch, 1},
		{"another server error", server(codes.Unimplemented, "unknown service etcdserverpb.Cluster"), 1},
		{"wrapped", fmt.Errorf("promote: %w", rpcerr.ErrLearnerNotReady), 13},
		{"read timed out", &client.TimeoutError{Tried: []client.EndpointFailure{{Endpoint: "a:1", Reason: "context deadline exceeded"}}}, 24},
		{"command timeout while connecting", &client.TimeoutError{Tried: []client.EndpointFailure{{Endpoint: "a:1", Reason: "no answer within 1s"}}}, 24},
		{"peer URL as endpoint", &client.PeerEndpointError{Endpoint: "a:2380", Message: "unknown service etcdserverpb.Cluster"}, 128},
		{"restore of an etcd snapshot", &datadir.EtcdSnapshotError{Path: "e.db"}, 128},
		{"snapshot neither clusterd's nor etcd's", &datadir.SnapshotContentError{Path: "x.db", Reason: "r"}, 19},
		{"restore in progress", &datadir.RestoreInProgressError{Dir: "d.tmp"}, 25},
		{"snapshot file cannot be created", &client.SnapshotFileError{Path: "/ro/x.db.part", Err: syscall.EROFS}, 128},
		{"save in progress", &client.SaveInProgressError{Part: "x.db.part"}, 25},
		{"local write failed", &client.LocalWriteError{Path: "x.db.part", Err: syscall.ENOSPC}, 30},
		{"data dir held by a running member", &datadir.InUseError{Dir: "d"}, 25},
		{"not a data dir", &datadir.NotDataDirError{Dir: "d", Reason: "r"}, 128},
		{"a sound term given to reset", datadir.ErrTermSound, 128},
		{"data dirs of different clusters", &datadir.DifferentClustersError{A: &datadir.DirStatus{}, B: &datadir.DirStatus{}}, 128},
		{"damaged data dir", &datadir.DamagedError{Dir: "d", Err: &datadir.WALError{File: "w", Reason: "r"}}, 1},
		{"no data dir to restart from", &datadir.NoRestartError{Reason: "r"}, 1},
		{"membership unsound", &datadir.UnsoundError{Problems: 1, Paths: 1}, 31},
		{"save interrupted by SIGINT", fmt.Errorf("snapshot save interrupted: %w", &interruptedError{syscall.SIGINT}), 130},
		{"save interrupted by SIGTERM", fmt.Errorf("snapshot save interrupted: %w", &interruptedError{syscall.SIGTERM}), 143},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestReportIsOneLine(t *testing.T) {
	var b bytes.Buffer
	if code := report(&b, errors.New("first\nsecond")); code != 1 {
		t.Errorf("exit %d", code)
	}
	if got := b.String(); got != "Error: first second\n" {
		t.Errorf("stderr %q", got)
	}
	b.Reset()
	report(&b, rpcerr.ErrMemberNotFound)
	if got := b.String(); got != "Error: etcdserver: member not found\n" {
		t.Errorf("stderr %q", got)
	}
}
