package rpcerr

import "google.golang.org/grpc/codes"

// The registry. Messages are etcd's (go.etcd.io/etcd/api/v3/v3rpc/rpctypes) letter for letter
// where etcd has the same case, and so are codes, except where a comment says otherwise.

// Membership changes.
var (
	ErrMemberNotFound   = register(codes.NotFound, "etcdserver: member not found")
	ErrMemberIDExists   = register(codes.FailedPrecondition, "etcdserver: member ID already exist")
	ErrPeerURLExists    = register(codes.FailedPrecondition, "etcdserver: Peer URLs already exists")
	ErrInvalidPeerURLs  = register(codes.InvalidArgument, "etcdserver: given member URLs are invalid")
	ErrMemberNotLearner = register(codes.FailedPrecondition, "etcdserver: can only promote a learner member")
	ErrLearnerNotReady  = register(codes.FailedPrecondition, "etcdserver: can only promote a learner member which is in sync with leader")
	ErrTooManyLearners  = register(codes.FailedPrecondition, "etcdserver: too many learner members in cluster")
	// etcd sends this one with Unknown, a defect there; matching by message covers both.
	ErrNotEnoughStartedMembers = register(codes.FailedPrecondition, "etcdserver: re-configuration failed due to not enough started members")
	ErrUnhealthyCluster        = register(codes.Unavailable, "etcdserver: unhealthy cluster")
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
	ErrNoLeader  = register(codes.Unavailable, "etcdserver: no leader")
	ErrNotLeader = register(codes.FailedPrecondition, "etcdserver: not leader")
	// The proposal was made and not applied in time: its outcome is unknown.
	ErrTimeout = register(codes.Unavailable, "etcdserver: request timed out")
	// etcd's: a proposal waited while leadership moved; its outcome is unknown too.
	ErrLeaderChanged = register(codes.Unavailable, "etcdserver: leader changed")
	ErrStopped       = register(codes.Unavailable, "etcdserver: server stopped")
	// clusterd's own, between members only: the proposal is known never to be applied (raft
	// dropped it, or a later leader overwrote it), so sending it again is safe.
	ErrProposalLost           = register(codes.Unavailable, "etcdserver: proposal lost, retry")
	ErrBadLeaderTransferee    = register(codes.FailedPrecondition, "etcdserver: bad leader transferee")
	ErrLeaderTransferTimedOut = register(codes.Unavailable, "etcdserver: request timed out, leader transfer took too long")
)

// Peers.
var (
	ErrClusterIDMismatch = register(codes.FailedPrecondition, "etcdserver: cluster ID mismatch")
	// clusterd's own: a raft message reached a member it was not addressed to.
	ErrWrongMember = register(codes.FailedPrecondition, "etcdserver: message for another member")
)

// Authentication and permissions.
var (
	// clusterd sends it when a client certificate's CN is not allowed; etcd when not root.
	ErrPermissionDenied = register(codes.PermissionDenied, "etcdserver: permission denied")
	ErrAuthFailed       = register(codes.InvalidArgument, "etcdserver: authentication failed, invalid user ID or password")
	ErrUserEmpty        = register(codes.InvalidArgument, "etcdserver: user name is empty")
	// etcd's, when the name given, or the client certificate's CN taken for it, is no user.
	ErrUserNotFound = register(codes.FailedPrecondition, "etcdserver: user name not found")
	// The client authenticates again, once.
	ErrInvalidAuthToken = register(codes.Unauthenticated, "etcdserver: invalid auth token")
)

// The KV service.
var (
	// clusterd's own: it keeps no keys; its KV service answers only the read etcdctl's endpoint
	// health makes, so that health checks built on etcdctl work unchanged.
	ErrNoKeys = register(codes.Unimplemented, "etcdserver: clusterd keeps no keys: it serves etcd's membership API, and of the KV service only the read of \"health\" that etcdctl endpoint health makes")
)
