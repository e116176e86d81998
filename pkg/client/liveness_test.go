package client

import (
	"errors"
	"strings"
	"testing"
)

func TestParseActivePeers(t *testing.T) {
	// etcd's page: IDs without leading zeros, a peer that went down at 0, another member's
	// series (a page holds only its own, but a proxy could merge).
	etcd := `# HELP etcd_network_active_peers The current number of active peer connections.
# TYPE etcd_network_active_peers gauge
etcd_network_active_peers{Local="8e9e05c52164694d",Remote="91bc3c398fb3c146"} 1
etcd_network_active_peers{Local="8e9e05c52164694d",Remote="fd422379fda50e48"} 0
etcd_network_active_peers{Local="91bc3c398fb3c146",Remote="fd422379fda50e48"} 1
etcd_server_id{server_id="8e9e05c52164694d"} 1
`
	got, err := parseActivePeers(strings.NewReader(etcd), 0x8e9e05c52164694d)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0x91bc3c398fb3c146] || got[0xfd422379fda50e48] || len(got) != 2 {
		t.Errorf("etcd page: got %v", got)
	}
	// clusterd's: 16 digits; a small ID keeps its zeros.
	clusterd := `etcd_network_active_peers{Local="00000000000000a1",Remote="0000000000000b02"} 1
etcd_server_id{server_id="00000000000000a1"} 1
`
	if got, err := parseActivePeers(strings.NewReader(clusterd), 0xa1); err != nil || !got[0xb02] {
		t.Errorf("clusterd page: got %v, %v", got, err)
	}
	// No peer ever connected: known, none live.
	if got, err := parseActivePeers(strings.NewReader(`etcd_server_id{server_id="a1"} 1`+"\n"), 0xa1); err != nil || len(got) != 0 {
		t.Errorf("no peers: got %v, %v", got, err)
	}
	// Another member's page, or one without etcd_server_id: the view is unknown.
	for _, page := range []string{clusterd, `etcd_network_active_peers{Local="a1",Remote="b02"} 1` + "\n", "not metrics at all"} {
		if _, err := parseActivePeers(strings.NewReader(page), 0xc3); err == nil {
			t.Errorf("page %q taken as member c3's", page)
		}
	}
}

func TestLivenessVerdicts(t *testing.T) {
	errTest := errors.New("refused")
	for _, c := range []struct {
		l           Liveness
		alive, gone bool
	}{
		{Liveness{Leader: 1}, false, true},
		{Liveness{Leader: 1, LeaderSees: true}, true, false},
		{Liveness{Leader: 1, Endpoint: "127.0.0.1:2379"}, true, false},
		{Liveness{Leader: 1, OwnURL: true}, true, false},
		{Liveness{Leader: 1, Leads: true}, true, false},
		// The leader's view unknown, or no leader: never gone.
		{Liveness{Leader: 1, LeaderErr: errTest}, false, false},
		{Liveness{}, false, false},
		{Liveness{Leader: 1, LeaderSees: true, LeaderErr: errTest}, false, false},
	} {
		if c.l.Alive() != c.alive || c.l.Gone() != c.gone {
			t.Errorf("%+v: alive %v gone %v, want %v %v", c.l, c.l.Alive(), c.l.Gone(), c.alive, c.gone)
		}
	}
}
