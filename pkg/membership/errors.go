package membership

import "github.com/clusterctl/clusterctl/pkg/rpcerr"

// The refusals of the membership rules are the registry's errors (pkg/rpcerr), so that the API
// answers them with their code and message and errors.Is holds after forwarding between members.
// Declared as error, as before, so that no caller depends on the registry's type.
var (
	ErrIDNotFound       error = rpcerr.ErrMemberNotFound
	ErrIDExists         error = rpcerr.ErrMemberIDExists
	ErrPeerURLExists    error = rpcerr.ErrPeerURLExists
	ErrInvalidPeerURLs  error = rpcerr.ErrInvalidPeerURLs
	ErrNotEnoughStarted error = rpcerr.ErrNotEnoughStartedMembers
	ErrUnhealthy        error = rpcerr.ErrUnhealthyCluster
	ErrPromoteVoter     error = rpcerr.ErrMemberNotLearner
	ErrLearnerNotReady  error = rpcerr.ErrLearnerNotReady
	ErrTooManyLearners  error = rpcerr.ErrTooManyLearners
	ErrIDRemoved        error = rpcerr.ErrMemberRemoved
	ErrNameExists       error = rpcerr.ErrMemberNameExists
	ErrInvalidName      error = rpcerr.ErrInvalidMemberName
	ErrURLIsClientURL   error = rpcerr.ErrPeerURLIsClientURL
)
