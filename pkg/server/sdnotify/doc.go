// Package sdnotify tells systemd about the member's state through the sd_notify protocol: one
// datagram per state on the unix socket named by $NOTIFY_SOCKET, as a Type=notify unit expects
// (docs/systemd.md).
//
// Invariants:
//   - Without NOTIFY_SOCKET (not started by systemd, or by a unit of another type) every call
//     does nothing and succeeds: the same binary runs anywhere.
//   - READY=1 is sent at most once, and only when the server says so: once it serves clients
//     and has joined and applied the cluster's membership. systemd starts the unit's
//     dependents on READY=1, so an early one would start them against a member that cannot
//     answer yet.
//   - STOPPING=1 is sent at most once, and after it nothing is: a member shutting down is never
//     announced ready again.
//
// It is the protocol's few lines rather than github.com/coreos/go-systemd/v22/daemon (which
// etcd calls): that package offers the same single send, and the at-most-once order above,
// which this package exists to keep, would have to be written around it anyway.
package sdnotify
