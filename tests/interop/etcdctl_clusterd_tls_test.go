package interop

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// TestEtcdctlManagesClusterdTLS is TestEtcdctlManagesClusterd on clusters with TLS and
// client-certificate authentication on both ports, as kubeadm sets etcd up (one CA, server
// and peer certificates with IP SANs, RSA 2048): etcdctl with --cacert, --cert and --key lists,
// adds a learner, starts it from its printed environment plus its TLS flags (a join over mutual
// TLS), promotes, updates and removes it, and prints the same against clusterd as against etcd.
func TestEtcdctlManagesClusterdTLS(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	compareEtcdctl(t, func(t *testing.T) *testpki.CA {
		ca, err := testpki.NewCA(t.TempDir(), "ca", testpki.RSA2048)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	})
}
