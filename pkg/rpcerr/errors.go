package rpcerr

import (
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
)

// The registry. etcd's errors are taken from etcd's rpctypes, code and message; clusterd's own
// are written here.

// Membership changes.
var (
	ErrMemberNotFound   = etcd(rpctypes.ErrGRPCMemberNotFound)
	ErrMemberIDExists   = etcd(rpctypes.ErrGRPCMemberExist)
	ErrPeerURLExists    = etcd(rpctypes.ErrGRPCPeerURLExist)
	ErrInvalidPeerURLs  = etcd(rpctypes.ErrGRPCMemberBadURLs)
	ErrMemberNotLearner = etcd(rpctypes.ErrGRPCMemberNotLearner)
	ErrLearnerNotReady  = etcd(rpctypes.ErrGRPCLearnerNotReady)
	ErrTooManyLearners  = etcd(rpctypes.ErrGRPCTooManyLearners)
	// etcd sends this one with Unknown, a defect there; matching by message covers both.
	ErrNotEnoughStartedMembers = etcd(rpctypes.ErrGRPCMemberNotEnoughStarted)
	ErrUnhealthyCluster        = etcd(rpctypes.ErrGRPCUnhealthy)
	// clusterd's own: names are unique in clusterd, not in etcd.
	ErrMemberNameExists = register(codes.FailedPrecondition, "etcdserver: member name already exists")
	// clusterd's own: a removed ID never comes back, and a peer refuses a removed member's
	// messages with it, which tells the removed member to stop.
	ErrMemberRemoved = register(codes.FailedPrecondition, "etcdserver: the member has been permanently removed from the cluster")
	// clusterd's own: a name that breaks ETCD_INITIAL_CLUSTER or the printed environment
	// (membership.ValidateName says why; clusterctl checks before it sends).
	ErrInvalidMemberName = register(codes.InvalidArgument, "etcdserver: member name is invalid")
	// clusterd's own: a peer URL that is some member's client URL; etcd accepts it, and the two
	// listeners then clash. A peer URL that is another member's peer URL keeps etcd's message
	// (ErrPeerURLExists), which clients match.
	ErrPeerURLIsClientURL = register(codes.FailedPrecondition, "etcdserver: peer URL is already a member's client URL")
)

// Leadership and the fate of a proposal.
var (
	ErrNoLeader  = etcd(rpctypes.ErrGRPCNoLeader)
	ErrNotLeader = etcd(rpctypes.ErrGRPCNotLeader)
	// The proposal was made and not applied in time: its outcome is unknown.
	ErrTimeout = etcd(rpctypes.ErrGRPCTimeout)
	// etcd's: a proposal waited while leadership moved; its outcome is unknown too.
	ErrLeaderChanged = etcd(rpctypes.ErrGRPCLeaderChanged)
	ErrStopped       = etcd(rpctypes.ErrGRPCStopped)
	// clusterd's own, between members only: the proposal is known never to be applied (raft
	// dropped it, or a later leader overwrote it), so sending it again is safe.
	ErrProposalLost        = register(codes.Unavailable, "etcdserver: proposal lost, retry")
	ErrBadLeaderTransferee = etcd(rpctypes.ErrGRPCBadLeaderTransferee)
	// etcd's server text (etcdserver/errors), which rpctypes lacks: etcd sends it as Unknown.
	ErrLeaderTransferTimedOut = register(codes.Unavailable, "etcdserver: request timed out, leader transfer took too long")
)

// Peers.
var (
	ErrClusterIDMismatch = etcd(rpctypes.ErrGRPCClusterIDMismatch)
	// clusterd's own: a raft message reached a member it was not addressed to.
	ErrWrongMember = register(codes.FailedPrecondition, "etcdserver: message for another member")
)

// Authentication and permissions.
var (
	// clusterd sends it when a client certificate's CN is not allowed; etcd when not root.
	ErrPermissionDenied = etcd(rpctypes.ErrGRPCPermissionDenied)
	ErrAuthFailed       = etcd(rpctypes.ErrGRPCAuthFailed)
	ErrUserEmpty        = etcd(rpctypes.ErrGRPCUserEmpty)
	// etcd's, when the name given, or the client certificate's CN taken for it, is no user.
	ErrUserNotFound = etcd(rpctypes.ErrGRPCUserNotFound)
	// The client authenticates again, once.
	ErrInvalidAuthToken = etcd(rpctypes.ErrGRPCInvalidAuthToken)
)

// The KV service.
var (
	// clusterd's own: it keeps no keys; its KV service answers only the read etcdctl's endpoint
	// health makes, so that health checks built on etcdctl work unchanged.
	ErrNoKeys = register(codes.Unimplemented, "etcdserver: clusterd keeps no keys: it serves etcd's membership API, and of the KV service only the read of \"health\" that etcdctl endpoint health makes")
)
