package membership

import "errors"

// The messages are a contract shared with etcd's clients, which map them to typed errors by
// their exact text: never reword them.
var (
	ErrIDNotFound       = errors.New("etcdserver: member not found")
	ErrIDExists         = errors.New("etcdserver: member ID already exist")
	ErrPeerURLExists    = errors.New("etcdserver: Peer URLs already exists")
	ErrInvalidPeerURLs  = errors.New("etcdserver: given member URLs are invalid")
	ErrNotEnoughStarted = errors.New("etcdserver: re-configuration failed due to not enough started members")
	ErrUnhealthy        = errors.New("etcdserver: unhealthy cluster")
	ErrPromoteVoter     = errors.New("etcdserver: can only promote a learner member")
	ErrLearnerNotReady  = errors.New("etcdserver: can only promote a learner member which is in sync with leader")
	ErrTooManyLearners  = errors.New("etcdserver: too many learner members in cluster")
	ErrIDRemoved        = errors.New("etcdserver: the member has been permanently removed from the cluster")
	ErrNameExists       = errors.New("etcdserver: member name already exists")
)
