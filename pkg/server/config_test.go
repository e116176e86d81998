package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
)

func validConfig() Config {
	return Config{
		Name: "a", DataDir: "/tmp/x",
		ListenClientURLs: []string{"http://127.0.0.1:2379"}, AdvertiseClientURLs: []string{"http://127.0.0.1:2379"},
		ListenPeerURLs: []string{"http://127.0.0.1:2380"}, InitialAdvertisePeerURLs: []string{"http://127.0.0.1:2380"},
		InitialCluster:      "a=http://127.0.0.1:2380,b=http://127.0.0.1:3380",
		InitialClusterState: "new", HeartbeatInterval: 100 * time.Millisecond, ElectionTimeout: time.Second, MaxLearners: 1,
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"valid", func(*Config) {}, ""},
		{"unknown state", func(c *Config) { c.InitialClusterState = "old" }, `--initial-cluster-state "old": must be new or existing`},
		{"malformed url", func(c *Config) { c.ListenPeerURLs = []string{"notaurl"} }, `--listen-peer-urls "notaurl": URL scheme must be http, https, unix, or unixs: notaurl`},
		{"url with path", func(c *Config) { c.AdvertiseClientURLs = []string{"http://127.0.0.1:2379/x"} }, `--advertise-client-urls "http://127.0.0.1:2379/x": URL must not contain a path`},
		{"duplicate url", func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:2379", "http://127.0.0.1:2379"} }, "URL given twice"},
		{"https without a certificate", func(c *Config) { c.ListenClientURLs = []string{"https://127.0.0.1:2379"} }, "--listen-client-urls https://127.0.0.1:2379 needs --cert-file and --key-file, or --auto-tls"},
		{"https metrics", func(c *Config) { c.ListenMetricsURLs = []string{"https://127.0.0.1:2381"} }, "served over plain http only"},
		{"TLS flag without an https listener", func(c *Config) { c.TLS.Peer.TrustedCAFile = "ca.pem" }, "--peer-trusted-ca-file is set but --listen-peer-urls has no https:// URL"},
		{"admin CNs without client certificates", func(c *Config) {
			c.ListenClientURLs = []string{"https://127.0.0.1:2379"}
			c.TLS.Client.CertFile, c.TLS.Client.KeyFile = "c.pem", "k.pem"
			c.AdminAllowedCNs = []string{"root"}
		}, "--admin-cert-allowed-cn needs --client-cert-auth"},
		{"initial cluster entry", func(c *Config) { c.InitialCluster = "a" }, "each entry must be name=peer-url"},
		{"initial cluster url", func(c *Config) { c.InitialCluster = "a=127.0.0.1:2380" }, "URL scheme must be"},
		{"url of two names", func(c *Config) { c.InitialCluster = "a=http://127.0.0.1:2380,b=http://127.0.0.1:2380" }, `peer URL http://127.0.0.1:2380 is given to both "a" and "b"`},
		{"election too short", func(c *Config) { c.ElectionTimeout = 200 * time.Millisecond }, "at least 5 times"},
		{"no name", func(c *Config) { c.Name = "" }, "--name must not be empty"},
		// ETCD_NAME=" a" from a hand-edited environment file: refused, never trimmed into "a".
		{"name with space around", func(c *Config) { c.Name = " a" }, `--name: member name " a" must not begin or end with white space`},
		{"too many advertised client URLs", func(c *Config) {
			c.AdvertiseClientURLs = nil
			for i := range membership.MaxURLs + 1 {
				c.AdvertiseClientURLs = append(c.AdvertiseClientURLs, fmt.Sprintf("http://10.0.%d.1:2379", i))
			}
		}, "--advertise-client-urls: 65 URLs, more than a member may have (64)"},
		{"one address twice", func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:2379", "http://localhost:2379"} },
			`--listen-client-urls "http://localhost:2379": the same address as "http://127.0.0.1:2379"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.tweak(&c)
			_, err := c.validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLocal(t *testing.T) {
	c := validConfig()
	initial, _ := c.validate()
	c.Name = "z"
	if _, err := datadir.Local(initial, c.Name, c.InitialAdvertisePeerURLs); err == nil || err.Error() != `couldn't find local name "z" in the initial cluster configuration` {
		t.Fatal(err)
	}
	c = validConfig()
	c.InitialAdvertisePeerURLs = []string{"http://127.0.0.1:9999"}
	if _, err := datadir.Local(initial, c.Name, c.InitialAdvertisePeerURLs); err == nil || !strings.Contains(err.Error(), "--initial-advertise-peer-urls") {
		t.Fatal(err)
	}
	// name=a,name=b lists one member with two URLs, as etcd reads it.
	c = validConfig()
	c.InitialCluster = "a=http://127.0.0.1:2380,a=http://10.0.0.1:2380"
	c.InitialAdvertisePeerURLs = []string{"http://10.0.0.1:2380", "http://127.0.0.1:2380"}
	initial, _ = c.validate()
	if _, err := datadir.Local(initial, c.Name, c.InitialAdvertisePeerURLs); err != nil || len(initial) != 1 {
		t.Fatal(err, initial)
	}
}

func TestIDsAreDeterministic(t *testing.T) {
	a := datadir.MemberID([]string{"http://b:1", "http://a:1"}, "t")
	if a != datadir.MemberID([]string{"http://a:1", "http://b:1"}, "t") || a == datadir.MemberID([]string{"http://a:1", "http://b:1"}, "u") {
		t.Fatal("member IDs must depend on the sorted URLs and the token only")
	}
	if datadir.ClusterID([]membership.ID{1, 2}, "t") != datadir.ClusterID([]membership.ID{2, 1}, "t") {
		t.Fatal("cluster ID must not depend on the order of members")
	}
}

func TestCheckJoin(t *testing.T) {
	c := membership.NewCluster(7, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:1"}},
		{ID: 2, Name: "b", PeerURLs: []string{"http://127.0.0.1:2"}},
		{ID: 3, Name: "new", PeerURLs: []string{"http://127.0.0.1:3"}},
	})
	parse := func(s string) []datadir.Initial { m, _ := datadir.ParseInitialCluster(s); return m }
	tests := []struct {
		name, initial, want string
	}{
		{"ok", "a=http://127.0.0.1:1,b=http://127.0.0.1:2,new=http://127.0.0.1:3", ""},
		{"missing member", "a=http://127.0.0.1:1,new=http://127.0.0.1:3",
			"the member count is unequal: --initial-cluster has 2 (a=http://127.0.0.1:1 new=http://127.0.0.1:3), the cluster has 3 (a=http://127.0.0.1:1 b=http://127.0.0.1:2 new=http://127.0.0.1:3)"},
		{"extra member", "a=http://127.0.0.1:1,b=http://127.0.0.1:2,new=http://127.0.0.1:3,x=http://127.0.0.1:4", "the member count is unequal"},
		{"wrong url", "a=http://127.0.0.1:1,b=http://127.0.0.1:2,new=http://127.0.0.1:9",
			"unmatched member while checking PeerURLs: --initial-cluster has new=http://127.0.0.1:9, the cluster has a=http://127.0.0.1:1 b=http://127.0.0.1:2 new=http://127.0.0.1:3"},
		{"other name", "a=http://127.0.0.1:1,b=http://127.0.0.1:2,other=http://127.0.0.1:3", `http://127.0.0.1:3 was added as "new", not "other"`},
		{"started before", "a=http://127.0.0.1:1,b=http://127.0.0.1:2,new=http://127.0.0.1:3", "has started before; a member that lost its data must be removed and added again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, cl := "new", c
			if tt.name == "other name" {
				local = "other"
			}
			if tt.name == "started before" {
				cl, _ = c.Apply(membership.Change{Kind: membership.KindPublish, Member: membership.Member{ID: 3}})
			}
			id, err := checkJoin(local, parse(tt.initial), cl)
			if tt.want == "" {
				if err != nil || id != 3 {
					t.Fatalf("got %v %v", id, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// A joining member stops waiting for the other answers once the member at the URL it asked is
// the leader that answer names.
func TestAnsweredByLeader(t *testing.T) {
	c := membership.NewCluster(7, []*membership.Member{
		{ID: 1, Name: "a", PeerURLs: []string{"http://127.0.0.1:1"}},
		{ID: 2, Name: "b", PeerURLs: []string{"http://127.0.0.1:2", "http://10.0.0.2:2"}},
	})
	for _, tt := range []struct {
		leader membership.ID
		url    string
		want   bool
	}{
		{1, "http://127.0.0.1:1", true},
		{2, "http://10.0.0.2:2", true},
		{2, "http://127.0.0.1:1", false},
		{0, "http://127.0.0.1:1", false},
		{9, "http://127.0.0.1:1", false},
	} {
		if got := answeredByLeader(&reconfig.ClusterInfo{Cluster: c, Leader: tt.leader}, tt.url); got != tt.want {
			t.Errorf("leader %v, asked at %s: %v, want %v", tt.leader, tt.url, got, tt.want)
		}
	}
}
