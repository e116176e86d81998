package command

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/registry"
	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

// Exit codes, docs/exit-codes.md. Scripts depend on them: never renumber.
const (
	exitOK               = 0
	exitRefused          = 1
	exitCannotConnect    = 2
	exitNotFound         = 10
	exitAlreadyExists    = 11
	exitQuorumProtection = 12
	exitLearnerNotReady  = 13
	exitOutcomeUnknown   = 14
	exitNoLeader         = 15
	exitAmbiguousName    = 16
	exitLearnerLimit     = 17
	exitNoDryRun         = 18
	exitCorruptSnapshot  = 19
	exitTLS              = 20
	exitPermissionDenied = 21
	exitAuthFailed       = 22
	exitAuthRequired     = 23
	exitTimedOut         = 24
	exitInUse            = 25
	exitUnhealthy        = 26
	exitBadTransferee    = 27
	exitNotLeader        = 28
	exitNoAnswer         = 29
	exitLocalWrite       = 30
	exitUnsound          = 31
	exitNoHistory        = 32
	exitDegraded         = 33
	exitSplit            = 34
	exitNotServing       = 35
	exitBadArgs          = 128
	// exitSignalBase + the signal's number: 130 for SIGINT, 143 for SIGTERM.
	exitSignalBase = 128
)

// interruptedError is a signal that stopped a command which cleans up after itself rather than
// dying of it. It exits as the shell reports a process that signal killed, 128 + its number, so
// a script sees the code it would have without the clean-up.
type interruptedError struct{ sig syscall.Signal }

func (e *interruptedError) Error() string { return "signal " + e.sig.String() }

// usageError is a problem with the command line; nothing was sent.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// serverExits maps the server's refusals to their codes, matched by the contract's message.
var serverExits = []struct {
	err  error
	code int
}{
	{rpcerr.ErrMemberNotFound, exitNotFound},
	{rpcerr.ErrPeerURLExists, exitAlreadyExists},
	{rpcerr.ErrMemberIDExists, exitAlreadyExists},
	{rpcerr.ErrMemberNameExists, exitAlreadyExists},
	{rpcerr.ErrNotEnoughStartedMembers, exitQuorumProtection},
	{rpcerr.ErrUnhealthyCluster, exitQuorumProtection},
	{rpcerr.ErrLearnerNotReady, exitLearnerNotReady},
	{rpcerr.ErrNoLeader, exitNoLeader},
	{rpcerr.ErrStopped, exitNoLeader},
	{rpcerr.ErrTooManyLearners, exitLearnerLimit},
	{rpcerr.ErrPermissionDenied, exitPermissionDenied},
	{rpcerr.ErrAuthFailed, exitAuthFailed},
	{rpcerr.ErrUserEmpty, exitAuthRequired},
	{rpcerr.ErrUserNotFound, exitAuthRequired},
	{rpcerr.ErrBadLeaderTransferee, exitBadTransferee},
	{rpcerr.ErrNotLeader, exitNotLeader},
}

// is reports whether err's tree holds an error of type E.
func is[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// exitCode is the code err ends the process with.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if interrupted, ok := errors.AsType[*interruptedError](err); ok {
		return exitSignalBase + int(interrupted.sig)
	}
	connect, isConnect := errors.AsType[*client.ConnectError](err)
	endpoints, isEndpoints := errors.AsType[*endpointsError](err)
	switch {
	case is[*usageError](err), is[*clienttls.ArgError](err),
		// What the command line asked is refused: a snapshot file that is not there or cannot be
		// created where it was asked for, an etcd snapshot given to restore, a data directory in
		// use, a token or an --initial-cluster that does not fit, an endpoint that is a peer URL,
		// a sound term given to reset. Nothing was written or changed.
		is[*datadir.NoSnapshotFileError](err), is[*datadir.NotEmptyError](err), is[*datadir.TokenClashError](err),
		is[*datadir.NameNotInClusterError](err), is[*datadir.PeerURLsMismatchError](err), is[*datadir.EtcdSnapshotError](err),
		is[*client.PeerEndpointError](err), is[*client.SnapshotFileError](err), is[*datadir.NotDataDirError](err),
		is[*datadir.DifferentClustersError](err), errors.Is(err, datadir.ErrTermSound):
		return exitBadArgs
	case isConnect && connect.TLS() != nil, is[*clienttls.Error](err):
		// No endpoint answered and TLS stopped at least one: the configuration is what to fix,
		// whatever the others said.
		return exitTLS
	case isConnect:
		return exitCannotConnect
	case is[*client.TimeoutError](err):
		// A read unanswered, or a change not sent: nothing changed, unlike 14.
		return exitTimedOut
	case is[*datadir.RestoreInProgressError](err), is[*client.SaveInProgressError](err), is[*datadir.InUseError](err):
		return exitInUse
	case is[*datadir.UnsoundError](err):
		return exitUnsound
	case is[*client.LocalWriteError](err):
		// This machine's disk, not the cluster: 1 would blame the server.
		return exitLocalWrite
	case is[*client.OutcomeUnknownError](err):
		// Before the server errors: a timed-out change wraps the server's timeout answer.
		return exitOutcomeUnknown
	case is[*client.AmbiguousNameError](err):
		return exitAmbiguousName
	case is[*TokenInUseError](err):
		// discovery new: the token has keys already; a script makes a fresh one.
		return exitAlreadyExists
	case errors.Is(err, registry.ErrSizeNotFound):
		// discovery status: no size key, so no such token here. A size key that cannot be read
		// (registry.ErrBadSizeKey) is no absence: it stays 1.
		return exitNotFound
	case is[*client.DryRunUnsupportedError](err):
		return exitNoDryRun
	case is[*notServingError](err):
		// member replace: promoted, not serving within --wait-timeout.
		return exitNotServing
	case is[*client.SplitError](err):
		// cluster status, endpoint status, member list: answers from two groups apart; what
		// answered was printed.
		return exitSplit
	case is[*DegradedError](err):
		// cluster status: a voter did not answer or there is no leader; everything was printed.
		return exitDegraded
	case is[*noCurrentContextError](err):
		// config current-context with none set.
		return exitNotFound
	case is[*client.HistoryUnsupportedError](err):
		return exitNoHistory
	case isEndpoints && endpoints.unhealthy:
		return exitUnhealthy
	case isEndpoints:
		return exitNoAnswer
	case errors.Is(err, datadir.ErrChecksum), errors.Is(err, client.ErrSnapshotChecksum), is[*datadir.SnapshotContentError](err):
		return exitCorruptSnapshot
	}
	for _, s := range serverExits {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return exitRefused
}

// report writes the Error: line for err, if any, and returns the exit code.
func report(stderr io.Writer, err error) int {
	if err != nil {
		// One line whatever the message holds, so a script can read stderr line by line.
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		fmt.Fprintf(stderr, "Error: %s\n", msg)
	}
	return exitCode(err)
}
