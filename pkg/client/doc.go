// Package client talks to clusterd, or to any etcd v3 server, over etcd's v3 gRPC API
// (etcdserverpb.Cluster and etcdserverpb.Maintenance) and returns typed results and typed
// errors. It prints nothing and knows nothing about the command line. Requests and answers are
// etcd's generated messages; wire.go turns answers into the package's own types, so no caller
// sees protobuf.
//
// Invariants:
//
//   - New does no I/O. The first call connects, so a process that never sends a request never
//     pays for a connection.
//   - Endpoints are tried in the order given; one that cannot be reached is skipped. Connecting
//     is bounded by Config.DialTimeout and fails with a *ConnectError naming every endpoint
//     tried and why it failed. Nothing has been sent when a *ConnectError is returned.
//   - A read (MemberList, Status) that fails in transport, or that its member answers with
//     Unavailable, is retried on the next endpoint. A membership change is never retried once it
//     may have been sent: a transport failure after sending, or a server timeout, becomes an
//     *OutcomeUnknownError, because the change may have been applied.
//   - An error the server answered with is a *ServerError carrying the server's message letter
//     for letter; errors.Is matches it against the error registry's Err* values (pkg/rpcerr, the
//     ones clusterd answers with) by that message, which is the contract (etcd's own clients map
//     errors by the same strings): no message is listed here.
//   - A dry run is a call of clusterd's own DryRun service, which etcd answers Unimplemented
//     (a *DryRunUnsupportedError): a dry run can never be taken for the change itself. Its
//     verdict is the answer, the report it was reached on and the refusal the change itself
//     would get, which the caller gets as the error that change would end with.
//   - Member names and the started flag come from clusterd's response metadata when present and
//     from etcdserverpb.Member.Name otherwise, so the client works against real etcd unchanged.
//   - Endpoints follow etcdctl's rules: https:// uses TLS, http:// never, a bare host:port when
//     TLS settings were given or Config.BareTLS is set; one client never mixes TLS and plain
//     endpoints (New refuses such a list). A connection that TLS stopped (clienttls recognises
//     grpc-go's reason) fails over like a refused one, and the *ConnectError carries the
//     *clienttls.Error so the caller can tell a configuration problem from a dead member.
//   - With a user, Authenticate is asked before the first request that needs a token, and the
//     token rides on every such request in etcd's "token" metadata. Status and MemberList, which
//     etcd serves without reading a token (tokenFree), go without one and never wait for a login:
//     on etcd a login is a raft entry, and these reads must answer on a cluster without a leader.
//     Calls made to several endpoints at once share one login, made only when one of them needs
//     it (sharedLogin). An "invalid auth token" answer, which etcd gives before
//     doing anything, is met with one new Authenticate and one resend, for changes too. Failing
//     to authenticate counts as a read that was not sent. The password is never put in an error.
//   - Nothing waits for a leader that is not there: a login not answered within loginPatience,
//     and the linearizable list that resolves a name before a change, are bounded by the
//     member's status, rpcerr.ErrNoLeader once it has named no leader for electionGrace.
//   - SaveSnapshot moves on to the next endpoint only before the first byte arrived; after it, a
//     failure is a *SnapshotStreamError, so a file never mixes two members' databases. The file
//     named appears only whole, checksum-verified and synced; on any failure it does not exist.
//   - A replacement's plan is a pure function of what its dry runs said (PlanReplace of
//     ReplaceFacts): the plan --dry-run prints is the one the run checks. A re-run that finds
//     neither member goes on only on clusterd's history's word (ResumesAfter): a removal marked
//     as the remove-first order's, no member added since.
//   - ClusterStatus asks each member through a Sibling, the one way a client for another
//     endpoint is built, so every member is reached with the TLS settings, client certificate,
//     credentials and dial timeout the caller gave; a member that does not answer is its row's
//     error, never the call's.
//   - Whether a member is alive is judged in one place, Liveness, for member prune and member
//     replace alike: the member's own client URLs, every given endpoint (an answer naming the
//     member), and the leader's etcd_network_active_peers read over HTTP on its client URL
//     with the client's TLS settings (the same tls.Config as its gRPC, client certificate
//     included). A member is Gone only when every source agrees and the leader's view was read;
//     a view that cannot be read never counts as "not live".
//   - Answers from several members are never folded into one cluster when they prove two groups
//     apart (SplitOf: different cluster IDs, two leaders in one term, or each group holding an
//     answering member the other's membership lacks); a SplitError names every group.
//
// A Client is not safe for concurrent use. Calls made at once each go through a client of their
// own (At for the same endpoint, Sibling for another), which carries the same TLS settings,
// credentials and timeouts.
package client
