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
	{client.ErrMemberNotFound, exitNotFound},
	{client.ErrPeerURLExists, exitAlreadyExists},
	{client.ErrMemberIDExists, exitAlreadyExists},
	{client.ErrMemberNameExists, exitAlreadyExists},
	{client.ErrNotEnoughStartedMembers, exitQuorumProtection},
	{client.ErrUnhealthyCluster, exitQuorumProtection},
	{client.ErrLearnerNotReady, exitLearnerNotReady},
	{client.ErrNoLeader, exitNoLeader},
	{client.ErrStopped, exitNoLeader},
	{client.ErrTooManyLearners, exitLearnerLimit},
	{client.ErrPermissionDenied, exitPermissionDenied},
	{client.ErrAuthFailed, exitAuthFailed},
	{client.ErrUserEmpty, exitAuthRequired},
	{client.ErrUserNotFound, exitAuthRequired},
	{client.ErrBadLeaderTransferee, exitBadTransferee},
	{client.ErrNotLeader, exitNotLeader},
}

// argumentError reports whether err refuses what the command line asked: a snapshot file that is
// not there or cannot be created where it was asked for, an etcd snapshot given to restore, a
// data directory in use, a token or an --initial-cluster that does not fit, an endpoint that is a
// peer URL, a sound term given to reset. Nothing was written or changed.
func argumentError(err error) bool {
	var (
		noFile   *datadir.NoSnapshotFileError
		notEmpty *datadir.NotEmptyError
		clash    *datadir.TokenClashError
		noName   *datadir.NameNotInClusterError
		mismatch *datadir.PeerURLsMismatchError
		etcd     *datadir.EtcdSnapshotError
		notDir   *datadir.NotDataDirError
		clusters *datadir.DifferentClustersError
		peer     *client.PeerEndpointError
		file     *client.SnapshotFileError
	)
	return errors.As(err, &noFile) || errors.As(err, &notEmpty) || errors.As(err, &clash) ||
		errors.As(err, &noName) || errors.As(err, &mismatch) || errors.As(err, &etcd) || errors.As(err, &peer) ||
		errors.As(err, &file) || errors.As(err, &notDir) || errors.As(err, &clusters) || errors.Is(err, datadir.ErrTermSound)
}

// exitCode is the code err ends the process with.
func exitCode(err error) int {
	var (
		usage       *usageError
		connect     *client.ConnectError
		unknown     *client.OutcomeUnknownError
		ambiguous   *client.AmbiguousNameError
		noDryRun    *client.DryRunUnsupportedError
		interrupted *interruptedError
		tlsErr      *clienttls.Error
		tlsArg      *clienttls.ArgError
		timedOut    *client.TimeoutError
		content     *datadir.SnapshotContentError
		restoring   *datadir.RestoreInProgressError
		saving      *client.SaveInProgressError
		endpoints   *endpointsError
		localWrite  *client.LocalWriteError
		tokenInUse  *TokenInUseError
		degraded    *DegradedError
		noCurrent   *noCurrentContextError
		dirInUse    *datadir.InUseError
		unsound     *datadir.UnsoundError
		noHistory   *client.HistoryUnsupportedError
		split       *client.SplitError
		notServing  *notServingError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &interrupted):
		return exitSignalBase + int(interrupted.sig)
	case errors.As(err, &usage), argumentError(err), errors.As(err, &tlsArg):
		return exitBadArgs
	case errors.As(err, &connect) && connect.TLS() != nil, errors.As(err, &tlsErr):
		// No endpoint answered and TLS stopped at least one: the configuration is what to fix,
		// whatever the others said.
		return exitTLS
	case errors.As(err, &connect):
		return exitCannotConnect
	case errors.As(err, &timedOut):
		// A read unanswered, or a change not sent: nothing changed, unlike 14.
		return exitTimedOut
	case errors.As(err, &restoring), errors.As(err, &saving), errors.As(err, &dirInUse):
		return exitInUse
	case errors.As(err, &unsound):
		return exitUnsound
	case errors.As(err, &localWrite):
		// This machine's disk, not the cluster: 1 would blame the server.
		return exitLocalWrite
	case errors.As(err, &unknown):
		// Before the server errors: a timed-out change wraps the server's timeout answer.
		return exitOutcomeUnknown
	case errors.As(err, &ambiguous):
		return exitAmbiguousName
	case errors.As(err, &tokenInUse):
		// discovery new: the token has keys already; a script makes a fresh one.
		return exitAlreadyExists
	case errors.Is(err, registry.ErrSizeNotFound):
		// discovery status: no size key, so no such token here. A size key that cannot be read
		// (registry.ErrBadSizeKey) is no absence: it stays 1.
		return exitNotFound
	case errors.As(err, &noDryRun):
		return exitNoDryRun
	case errors.As(err, &notServing):
		// member replace: promoted, not serving within --wait-timeout.
		return exitNotServing
	case errors.As(err, &split):
		// cluster status, endpoint status, member list: answers from two groups apart; what
		// answered was printed.
		return exitSplit
	case errors.As(err, &degraded):
		// cluster status: a voter did not answer or there is no leader; everything was printed.
		return exitDegraded
	case errors.As(err, &noCurrent):
		// config current-context with none set.
		return exitNotFound
	case errors.As(err, &noHistory):
		return exitNoHistory
	case errors.As(err, &endpoints) && endpoints.unhealthy:
		return exitUnhealthy
	case errors.As(err, &endpoints):
		return exitNoAnswer
	case errors.Is(err, datadir.ErrChecksum), errors.Is(err, client.ErrSnapshotChecksum), errors.As(err, &content):
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
