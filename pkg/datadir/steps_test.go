package datadir

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// tlsCluster is a member a on https:// both ports, b with https:// peers only, and c, a voter
// that never started (no name, no client URLs).
func tlsCluster() (*DirStatus, []*DirStatus) {
	c := membership.NewCluster(9, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"https://a:2380"}, ClientURLs: []string{"https://a:2379"}},
		{ID: 2, Name: "b", PeerURLs: []string{"https://b:2380"}, ClientURLs: []string{"http://b:2379"}},
		{ID: 3, PeerURLs: []string{"http://c:2380"}},
	})
	a := &DirStatus{Dir: "/d/a", Kind: KindEtcd, MemberID: 1, ClusterID: 9, Name: "a", Cluster: c, Check: &CheckResult{}}
	b := &DirStatus{Dir: "/d/b", Kind: KindEtcd, MemberID: 2, ClusterID: 9, Name: "b", Cluster: c, Check: &CheckResult{}}
	return a, []*DirStatus{a, b}
}

// The members' TLS files go on each start line, {name} made each member's name, on the ports
// whose URLs are https:// only; the clusterctl lines carry the operator's flags; a voter added
// back is promoted by the ID its add wrote.
func TestStepsCarryTLSAndClusterctlFlags(t *testing.T) {
	a, dirs := tlsCluster()
	how := StepOptions{
		TLS: MemberTLS{CertFile: "/pki/{name}.pem", KeyFile: "/pki/{name}-key.pem", TrustedCAFile: "/pki/ca.pem", ClientCertAuth: true,
			PeerCertFile: "/pki/{name}-peer.pem", PeerKeyFile: "/pki/{name}-peer-key.pem", PeerTrustedCAFile: "/pki/ca.pem", PeerClientCertAuth: true},
		Clusterctl: []string{"--cacert=/pki/ca.pem", "--user=root", "--password-file=/my pw"},
	}
	steps := how.steps(a, dirs)
	all := joined(steps)
	for _, want := range []string{
		"etcd --name a --data-dir /d/a --force-new-cluster --listen-peer-urls https://a:2380 --initial-advertise-peer-urls https://a:2380 --listen-client-urls https://a:2379 --advertise-client-urls https://a:2379 --cert-file /pki/a.pem --key-file /pki/a-key.pem --trusted-ca-file /pki/ca.pem --client-cert-auth --peer-cert-file /pki/a-peer.pem --peer-key-file /pki/a-peer-key.pem --peer-trusted-ca-file /pki/ca.pem --peer-client-cert-auth\n",
		"clusterctl --endpoints=https://a:2379 --cacert=/pki/ca.pem --user=root --password-file='/my pw' member list\n",
		"clusterctl --endpoints=https://a:2379 --cacert=/pki/ca.pem --user=root --password-file='/my pw' member add b --peer-urls=https://b:2380 --learner --if-not-exists --id-file=b.id -w env > b.env\n",
		"(set -a; . ./b.env; exec etcd --data-dir /d/b --listen-peer-urls https://b:2380 --listen-client-urls http://b:2379 --advertise-client-urls http://b:2379 --peer-cert-file /pki/b-peer.pem --peer-key-file /pki/b-peer-key.pem --peer-trusted-ca-file /pki/ca.pem --peer-client-cert-auth)\n",
		`member promote "$(cat b.id)" --wait=60s` + "\n",
		"member add 0000000000000003 --peer-urls=http://c:2380 --learner --if-not-exists --id-file=0000000000000003.id -w env > 0000000000000003.env\n",
		"(set -a; . ./0000000000000003.env; exec etcd --data-dir '<its empty data directory>' --listen-peer-urls http://c:2380)\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "records no TLS files") || strings.Contains(all, "_FILE>") {
		t.Errorf("a placeholder where every file was given:\n%s", all)
	}
}

// Where the data directory cannot tell a TLS file and none was given, the line has a named
// placeholder and its step one sentence saying what to put there; an http:// port has none.
func TestStepsPlaceholders(t *testing.T) {
	a, dirs := tlsCluster()
	steps := StepOptions{}.steps(a, dirs)
	start, addB, addC := steps[3], steps[4], steps[5]
	for _, p := range []string{"'<CERT_FILE>'", "'<KEY_FILE>'", "'<TRUSTED_CA_FILE>'", "'<PEER_CERT_FILE>'", "'<PEER_KEY_FILE>'", "'<PEER_TRUSTED_CA_FILE>'"} {
		if !strings.Contains(start.Commands[0], p) {
			t.Errorf("start line without %s: %s", p, start.Commands[0])
		}
	}
	if !strings.Contains(start.Say, "Before running: the member's client URLs are https://") || !strings.Contains(start.Say, "Before running: the member's peer URLs are https://") {
		t.Errorf("the start step does not say what its placeholders stand for: %s", start.Say)
	}
	if strings.Contains(addB.Commands[1], "<CERT_FILE>") || !strings.Contains(addB.Commands[1], "<PEER_CERT_FILE>") || strings.Contains(addB.Say, "client URLs are https://") {
		t.Errorf("b: placeholders for its https:// peer port only: %+v", addB)
	}
	if strings.Contains(addC.Say, "https://") || !strings.HasSuffix(addC.Say, "Before running: replace <its empty data directory> with an empty directory on the member's host: its data directory was not given to datadir status.") {
		t.Errorf("c, on http://, needs no TLS file, and a directory: %+v", addC)
	}
}

func joined(steps []Step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString("# " + s.Say + "\n")
		for _, c := range s.Commands {
			b.WriteString(c + "\n")
		}
	}
	return b.String()
}
