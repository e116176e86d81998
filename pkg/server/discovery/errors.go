package discovery

import (
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/clusterctl/clusterctl/pkg/registry"
)

// Each refusal is one line: what happened, in etcd's words where etcd has them, then what the
// operator does next. Each matches its registry error with errors.Is where there is one.

// FullError: the token's cluster is full, and this member is not one of it.
type FullError struct {
	Token   string
	Size    int
	Members []string // the names in the cluster
}

func (e *FullError) Error() string {
	return fmt.Sprintf("%v: the %d members of discovery token %q are registered (%s); to grow the running cluster, add this member with `clusterctl member add` and start it with --initial-cluster-state=existing and no --discovery-token",
		registry.ErrFullCluster, e.Size, e.Token, strings.Join(e.Members, ", "))
}

func (e *FullError) Unwrap() error { return registry.ErrFullCluster }

// TakenError: another registration holds this member's name or one of its peer URLs.
type TakenError struct {
	Token string
	// What is "name \"x\"" or "peer URL http://...".
	What string
	// By is the other registration's value.
	By string
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("discovery: %s is already registered under discovery token %q by %s; give this member another --name or --initial-advertise-peer-urls, or use a new token for a new cluster",
		e.What, e.Token, e.By)
}

// BootstrappedError: this very member already left discovery with the full cluster, so its
// data directory, now empty, was lost.
type BootstrappedError struct {
	Token string
	Name  string
	ID    uint64
}

func (e *BootstrappedError) Error() string {
	return fmt.Sprintf("discovery: member %q (%016x) already bootstrapped a cluster with discovery token %q and its data directory is empty: the token belongs to a started cluster; replace this member with `clusterctl member remove %016x` and `clusterctl member add`, then start it with --initial-cluster-state=existing and no --discovery-token",
		e.Name, e.ID, e.Token, e.ID)
}

// UnreachableError: the discovery service did not answer; nothing was written.
type UnreachableError struct {
	Endpoints []string
	Within    time.Duration
	Err       error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("discovery: cannot reach the discovery service at %s within %v (%v); nothing was registered: check --discovery-endpoints and that the discovery service is running",
		strings.Join(e.Endpoints, ","), e.Within, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// CredentialsError: the discovery service refused --discovery-user and --discovery-password;
// nothing was registered. The password is never in the line.
type CredentialsError struct {
	Endpoints []string
	Err       error
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("discovery: the discovery service at %s refused the credentials (%v); nothing was registered: check --discovery-user and --discovery-password",
		strings.Join(e.Endpoints, ","), e.Err)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

// PermissionError: the discovery service took the credentials but denied the user the token's
// keys (etcd's auth is on, and no role of the user may read them, or write them); nothing was
// registered. The password is never in the line.
type PermissionError struct {
	Endpoints []string
	// User is --discovery-user's name; empty when etcd took the client certificate's CN as the
	// user.
	User  string
	Token string
	Err   error // rpctypes.ErrPermissionDenied
}

func (e *PermissionError) Error() string {
	who := fmt.Sprintf("user %q", e.User)
	if e.User == "" {
		who = "the client certificate's user (its CN)"
	}
	return fmt.Sprintf("discovery: the discovery service at %s refused %s the keys of discovery token %q (%v); nothing was registered: give the user a role with readwrite on the keys with prefix %s (etcdctl role grant-permission --prefix), or set --discovery-user to a user with the root role",
		strings.Join(e.Endpoints, ","), who, e.Token, e.Err, registry.TokenPrefix(e.Token))
}

func (e *PermissionError) Unwrap() error { return e.Err }

// credentialsRefused reports whether err is etcd refusing a user or password as the client
// authenticates.
func credentialsRefused(err error) bool {
	switch rpctypes.Error(err) {
	case rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound:
		return true
	}
	return false
}

// TimeoutError: the cluster did not fill within the wait.
type TimeoutError struct {
	Token      string
	Size       int
	Registered []string
	Waited     time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("discovery: the cluster of discovery token %q did not fill within %v: %d of %d members registered (%s); start the missing members with the same token and start this one again, or raise --discovery-wait-timeout",
		e.Token, e.Waited, len(e.Registered), e.Size, strings.Join(e.Registered, ", "))
}
