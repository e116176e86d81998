// Package testpki makes a throw-away certificate authority and the certificates the TLS tests need:
// server certificates with IP and DNS SANs, client certificates with a chosen CN, peer
// certificates usable as both server and client (as etcd's peer certificates are), and the bad
// ones a test must see refused: expired, not yet valid, for the wrong host, or from another CA.
//
// Invariants:
//   - Test code only: import it from _test.go files (and tests/), never from a package a binary
//     links.
//   - Everything is written as PEM under the directory the caller gives (a t.TempDir()), private
//     keys with mode 0600, as etcd and kubeadm expect of a key file; nothing else on disk is
//     touched.
//   - ECDSA P-256 is the default because a test makes many keys and P-256 takes microseconds;
//     RSA 2048, what kubeadm makes, is there so the benchmarks and interop tests can use the
//     key type production clusters use. A CA signs every leaf with its own algorithm.
//   - Every certificate gets a fresh random serial number and a file name of its own, so issuing
//     the same CN twice (a renewed certificate) never overwrites an earlier file; a test that
//     wants rotation in place says so with Pair.WriteTo.
//   - Validity is "an hour ago to a day from now" unless an option says otherwise, so a clock a
//     little off between processes never makes a good certificate look not yet valid.
package testpki
