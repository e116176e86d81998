// Command bench is `make bench`: it measures the operator's paths through clusterctl and clusterd
// against their floors on this machine and reports both, with their ratios, as a table on stdout
// and as JSON (bench-results/latest.json by default). docs/benchmarks.md explains every figure.
//
// It builds bin/clusterd, bin/clusterctl, the floor program (tests/bench/floor) and peakrss, starts a
// real 3-member clusterd cluster on 127.0.0.1 with ephemeral ports and data dirs in a fresh
// directory on disk, and measures:
//
//   - whole `clusterctl member list` processes, interleaved with the floor (dial plus one unary
//     gRPC call) and, when scripts/build-etcd.sh has already built it, etcdctl 3.7.1;
//   - on a second cluster with TLS and client-certificate authentication on both ports and RSA
//     2048 keys (kubeadm's), whole `member list` processes of clusterctl and etcdctl with the same
//     --cacert/--cert/--key, and of the floor over TLS, interleaved with clusterctl and the floor
//     in plain text on the first cluster, so what TLS adds is a difference of two medians from
//     one stretch of time; then single conf changes on both clusters in turn (-tls=false skips it);
//   - `member add --learner` followed by `member remove`, two processes per pair;
//   - one membership change through pkg/client in this process, and the append+fdatasync floor of
//     a 4 KiB record in the same file system;
//   - the RSS of each idle clusterd, and the peak RSS of the `member list` processes, read
//     through tests/bench/peakrss (the bench's own children would report the bench's RSS);
//   - the replacement of the leader by a new member, end to end: `clusterctl member replace
//     OLD NEW --peer-urls=URL -w env` with the new member started as soon as the environment is
//     printed, interleaved with the same steps as separate etcdctl commands (member add
//     --learner, the start, member promote until it succeeds, endpoint health of the new member
//     until it answers, which member replace checks before it returns, move-leader, member
//     remove);
//   - leader removals seen by etcd's own client (clientv3, round-robin over every endpoint)
//     listing the members in a loop: the longest gap between successful lists of each;
//   - after filling the log with conf changes (some of them behind a snapshot), how long a new
//     learner takes from the start of its process until `member promote` succeeds, and the
//     longest gap between successful linearizable member lists while the leader is removed;
//     the same learners on a real etcd 3.7.1 cluster given as many puts, when etcd is built.
//
// Guarantees:
//   - Every figure states its run count and warm-up runs; the floors are measured in the same
//     run, on the same machine state, as the figures compared with them.
//   - Only 127.0.0.1 is used. Data dirs are on disk, never tmpfs: a tmpfs directory is refused,
//     because fsync there costs nothing and the figures would mean nothing.
//   - Every loop is bounded by a count and by a deadline, and the whole run by -timeout.
//   - Every process started is stopped before the program returns, also on error, SIGINT or
//     SIGTERM; servers also die with the program if it is killed (Pdeathsig).
//   - The exit status is 0 when every figure was measured, whether or not it met its target
//     (the table says which did), and 1 when a measurement could not be made.
package main
