package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// ServerError is an error the server answered with: the registry's own value when the answer's
// message is registered (pkg/rpcerr), otherwise the server's code and message, unchanged.
// errors.Is matches by message alone: etcd sends some of these with a different code than
// clusterd (for example Unknown instead of FailedPrecondition for "not enough started
// members"), and scripts and etcd's own clients match the strings.
type ServerError = rpcerr.Error

// ConnectError reports that no endpoint answered: none could be connected to within the dial
// timeout, or, for a read, every connected endpoint failed in transport. Nothing was changed.
type ConnectError struct {
	// Tried holds one entry per endpoint tried, in the order tried, with why it failed.
	Tried []EndpointFailure
}

// EndpointFailure is why one endpoint did not answer.
type EndpointFailure struct {
	Endpoint string
	Reason   string
	// TLS is set when a TLS handshake or a transport-security mismatch stopped the connection;
	// Reason is then its message.
	TLS *clienttls.Error
	// Answer is the member's own answer when it gave one (no leader, request timed out).
	Answer *ServerError
	// Peer is set when the endpoint is an etcd member's peer port (it answered etcd's peer
	// /version): a peer URL given where a client URL belongs.
	Peer bool
	// deadline is set when the request ended on the caller's deadline: the member learns it with
	// the request and may end the call on it a moment before this side's context ends.
	deadline bool
}

func (e *ConnectError) Error() string {
	if len(e.Tried) == 1 && e.Tried[0].TLS != nil {
		// It names the endpoint and says what to do.
		return e.Tried[0].TLS.Error()
	}
	return "no endpoint answered: " + joinTried(e.Tried)
}

// joinTried names every endpoint tried and why it did not answer.
func joinTried(tried []EndpointFailure) string {
	parts := make([]string, len(tried))
	for i, t := range tried {
		if t.TLS != nil {
			parts[i] = "(" + t.TLS.Error() + ")"
		} else {
			parts[i] = t.Endpoint + " (" + t.Reason + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// TLS returns the first endpoint's TLS failure, or nil when TLS stopped none. When no endpoint
// answered and any failed on TLS, the configuration is what the operator must fix: the other
// endpoints may only have been down.
func (e *ConnectError) TLS() *clienttls.Error {
	for _, t := range e.Tried {
		if t.TLS != nil {
			return t.TLS
		}
	}
	return nil
}

// TimeoutError reports that the caller's deadline ran out before any member answered (in full:
// a snapshot stream that had not ended counts), and that nothing was changed: a read that went
// unanswered or unfinished, or a change that was never sent because connecting took the whole
// time. Tried names every endpoint, each with what it said or did. A change that was sent and
// went unanswered is an *OutcomeUnknownError instead.
type TimeoutError struct {
	Tried []EndpointFailure
}

func (e *TimeoutError) Error() string {
	return "timed out before any member answered; nothing was changed: " + joinTried(e.Tried)
}

// PeerEndpointError reports an endpoint that answered without etcd's client services: a peer
// URL given where a client URL belongs. Nothing was done there.
type PeerEndpointError struct {
	Endpoint string
	Message  string // the server's own words, e.g. "unknown service etcdserverpb.Cluster"
}

func (e *PeerEndpointError) Error() string {
	return fmt.Sprintf("endpoint %s has no etcd client service (%s): it looks like a peer URL; give the member's client URL (--advertise-client-urls) instead", e.Endpoint, e.Message)
}

// peerEndpoint reports whether se is grpc's answer for a service every member's client port has
// (Cluster, Maintenance), which a member's peer port answers to the client API. A missing KV
// service is no sign: clusterd serves membership only.
func peerEndpoint(se *ServerError) bool {
	return se.Code == codes.Unimplemented && (se.Message == "unknown service etcdserverpb.Cluster" ||
		se.Message == "unknown service etcdserverpb.Maintenance")
}

// OutcomeUnknownError reports a membership change that was sent but not answered in time: it may
// or may not have been applied, so it must not be repeated blindly.
type OutcomeUnknownError struct {
	Endpoint string
	Err      error
}

func (e *OutcomeUnknownError) Error() string {
	if se, ok := errors.AsType[*ServerError](e.Err); ok {
		// The server's own words are the contract; they already say the request timed out.
		return se.Message
	}
	return fmt.Sprintf("outcome unknown: the request was sent to %s but no answer came (%v); check member list before retrying", e.Endpoint, e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// NotFoundError reports a member name that matches no member. It is an rpcerr.ErrMemberNotFound for
// errors.Is, so a caller handles a missing name and a missing ID alike.
type NotFoundError struct {
	Ref string
	// Unstarted are the members without a name: on etcd, members added and not started yet,
	// one of which the name may mean (etcd learns a name when its member starts).
	Unstarted []Member
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("member not found: no member with ID or name %q", e.Ref)
	if len(e.Unstarted) == 0 {
		return msg
	}
	each := make([]string, len(e.Unstarted))
	for i, m := range e.Unstarted {
		each[i] = FormatID(m.ID) + " (" + strings.Join(m.PeerURLs, ",") + ")"
	}
	return msg + "; not started yet, so without a name: " + strings.Join(each, ", ") + ": give the member ID"
}

// notFound is the *NotFoundError for ref among members.
func notFound(members []Member, ref string) *NotFoundError {
	e := &NotFoundError{Ref: ref}
	for _, m := range members {
		if m.Name == "" {
			e.Unstarted = append(e.Unstarted, m)
		}
	}
	return e
}

func (e *NotFoundError) Is(target error) bool { return target == rpcerr.ErrMemberNotFound }

// AmbiguousNameError reports a name that matches more than one member; nothing was sent.
type AmbiguousNameError struct {
	Name string
	IDs  []uint64
}

func (e *AmbiguousNameError) Error() string {
	return fmt.Sprintf("name %q matches %d members (%s): give the member ID instead", e.Name, len(e.IDs), strings.Join(FormatIDs(e.IDs), ", "))
}

// serverAnswer returns the *ServerError for err when the server itself answered, and nil when
// err came from the transport or the deadline, where the server may not have seen the request
// or may not have finished it.
func serverAnswer(err error) *ServerError {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		// grpc-go reports lost connections and expired deadlines with these codes; etcd's own
		// answers with the same codes are recognised by their prefix.
		if !strings.HasPrefix(st.Message(), "etcdserver: ") {
			return nil
		}
	}
	if known, ok := rpcerr.FromStatus(err).(*ServerError); ok {
		return known
	}
	return &ServerError{Code: st.Code(), Message: st.Message()}
}

// unimplemented reports whether the server answered that it does not know the call.
func unimplemented(err error) bool {
	se, ok := errors.AsType[*ServerError](err)
	return ok && se.Code == codes.Unimplemented
}

// outcomeUnknown reports whether the server's answer means "not finished in time": etcd also
// sends "request timed out, possibly due to ..." variants, and "leader changed" while a proposal
// waited, all of which leave the proposal's fate open.
func outcomeUnknown(se *ServerError) bool {
	return strings.HasPrefix(se.Message, rpcerr.ErrTimeout.Message) || errors.Is(se, rpcerr.ErrLeaderChanged)
}

// PeerURLHolder is the member holding one of peerURLs (compared in canonical form), nil when
// none does: the member an "etcdserver: Peer URLs already exists" refusal is about.
func PeerURLHolder(members []Member, peerURLs []string) *Member {
	want := canonicalURLs(peerURLs)
	for i, m := range members {
		if slices.ContainsFunc(canonicalURLs(m.PeerURLs), func(u string) bool { return slices.Contains(want, u) }) {
			return &members[i]
		}
	}
	return nil
}
