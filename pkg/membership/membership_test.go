package membership

import (
	"errors"
	"testing"
)

func cluster(voters, learners int) *Cluster {
	var ms []*Member
	for i := 1; i <= voters+learners; i++ {
		ms = append(ms, &Member{ID: ID(i), Name: "m" + string(rune('0'+i)), PeerURLs: []string{"http://127.0.0.1:" + string(rune('0'+i)) + "380"}, IsLearner: i > voters, Started: true})
	}
	return NewCluster(0xc1, ms)
}

// peers is the leader's view of c: every member started once, those in up connected now.
func peers(c *Cluster, up ...ID) Peers {
	p := Peers{Leader: 1, Started: map[ID]bool{}, Connected: map[ID]bool{}}
	for id := range c.Members {
		p.Started[id] = true
	}
	for _, id := range up {
		p.Connected[id] = true
	}
	return p
}

func addVoter(id ID) Change {
	return Change{Kind: KindAdd, Member: Member{ID: id, Name: "new", PeerURLs: []string{"http://127.0.0.1:9999"}}}
}

func TestValidate(t *testing.T) {
	c := cluster(3, 1)
	removed, _ := c.Apply(Change{Kind: KindRemove, Member: Member{ID: 4}})
	tests := []struct {
		name string
		c    *Cluster
		ch   Change
		want error
	}{
		{"add", c, addVoter(9), nil},
		{"add existing id", c, Change{Kind: KindAdd, Member: Member{ID: 2, PeerURLs: []string{"http://127.0.0.1:9999"}}}, ErrIDExists},
		{"add removed id", removed, Change{Kind: KindAdd, Member: Member{ID: 4, PeerURLs: []string{"http://127.0.0.1:9999"}}}, ErrIDRemoved},
		{"add used url", c, Change{Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://127.0.0.1:2380"}}}, ErrPeerURLExists},
		{"add bad url", c, Change{Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"notaurl"}}}, ErrInvalidPeerURLs},
		{"add no url", c, Change{Kind: KindAdd, Member: Member{ID: 9}}, ErrInvalidPeerURLs},
		{"add duplicate url", c, Change{Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://a:1", "http://a:1"}}}, ErrInvalidPeerURLs},
		{"add taken name", c, Change{Kind: KindAdd, Member: Member{ID: 9, Name: "m2", PeerURLs: []string{"http://a:1"}}}, ErrNameExists},
		{"add zero id", c, Change{Kind: KindAdd, Member: Member{PeerURLs: []string{"http://a:1"}}}, ErrIDNotFound},
		{"remove", c, Change{Kind: KindRemove, Member: Member{ID: 2}}, nil},
		{"remove unknown", c, Change{Kind: KindRemove, Member: Member{ID: 9}}, ErrIDNotFound},
		{"remove removed", removed, Change{Kind: KindRemove, Member: Member{ID: 4}}, ErrIDNotFound},
		{"remove last voter", cluster(1, 1), Change{Kind: KindRemove, Member: Member{ID: 1}}, ErrNotEnoughStarted},
		{"remove learner of one voter", cluster(1, 1), Change{Kind: KindRemove, Member: Member{ID: 2}}, nil},
		{"update own url kept", c, Change{Kind: KindUpdate, Member: Member{ID: 1, PeerURLs: []string{"http://127.0.0.1:1380", "http://10.0.0.1:1380"}}}, nil},
		// localhost and 127.0.0.1 are one address: listed twice, or beside another member's.
		// A member may be reached under two names of one address, as etcd allows.
		{"update own url by two names", c, Change{Kind: KindUpdate, Member: Member{ID: 1, PeerURLs: []string{"http://127.0.0.1:1380", "http://localhost:1380"}}}, nil},
		{"update own url twice by another spelling", c, Change{Kind: KindUpdate, Member: Member{ID: 1, PeerURLs: []string{"http://127.0.0.1:1380", "HTTP://127.0.0.1:1380"}}}, ErrInvalidPeerURLs},
		{"update to other's url", c, Change{Kind: KindUpdate, Member: Member{ID: 1, PeerURLs: []string{"http://127.0.0.1:2380"}}}, ErrPeerURLExists},
		{"update unknown", c, Change{Kind: KindUpdate, Member: Member{ID: 9, PeerURLs: []string{"http://a:1"}}}, ErrIDNotFound},
		{"promote learner", c, Change{Kind: KindPromote, Member: Member{ID: 4}}, nil},
		{"promote voter", c, Change{Kind: KindPromote, Member: Member{ID: 1}}, ErrPromoteVoter},
		{"promote unknown", c, Change{Kind: KindPromote, Member: Member{ID: 9}}, ErrIDNotFound},
		{"publish", c, Change{Kind: KindPublish, Member: Member{ID: 4, Name: "m4"}}, nil},
		{"publish removed", removed, Change{Kind: KindPublish, Member: Member{ID: 4}}, ErrIDNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.Validate(tt.ch); !errors.Is(err, tt.want) {
				t.Fatalf("Validate: got %v, want %v", err, tt.want)
			}
			// Apply checks a subset (Applicable); whatever it refuses, it leaves untouched.
			next, err := tt.c.Apply(tt.ch)
			if err != nil && (tt.want == nil || next != tt.c) {
				t.Fatalf("Apply: got %v, want %v and the cluster as it was", err, tt.want)
			}
		})
	}
}

// TestApplyKeepsOlderRules: an entry that an older version validated and committed is applied
// by this one too, though this version's Validate refuses such input: a member replaying the log
// must reach the membership its peers reached.
func TestApplyKeepsOlderRules(t *testing.T) {
	c := cluster(3, 1)
	for name, ch := range map[string]Change{
		"another member's URL by another spelling": {Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://localhost:2380"}}},
		"port 0":                 {Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://10.0.0.1:0"}}},
		"name with space around": {Kind: KindAdd, Member: Member{ID: 9, Name: " n", PeerURLs: []string{"http://10.0.0.1:7"}}},
		"update to another spelling of a member's URL": {Kind: KindUpdate, Member: Member{ID: 1, PeerURLs: []string{"http://localhost:3380"}}},
	} {
		if c.Validate(ch) == nil {
			t.Errorf("%s: Validate accepted it; the test needs input this version refuses", name)
		}
		if _, err := c.Apply(ch); err != nil {
			t.Errorf("%s: Apply refused an entry older versions applied: %v", name, err)
		}
	}
}

func TestApply(t *testing.T) {
	c := cluster(3, 1)
	upd, err := c.Apply(Change{Kind: KindUpdate, Member: Member{ID: 4, PeerURLs: []string{"http://127.0.0.1:7380"}}})
	if err != nil || !upd.Members[4].IsLearner || upd.Members[4].PeerURLs[0] != "http://127.0.0.1:7380" {
		t.Fatalf("update of a learner must keep it a learner: %+v %v", upd.Members[4], err)
	}
	if c.Members[4].PeerURLs[0] == "http://127.0.0.1:7380" {
		t.Fatal("Apply changed its receiver")
	}
	pro, _ := upd.Apply(Change{Kind: KindPromote, Member: Member{ID: 4}})
	if pro.Members[4].IsLearner || len(pro.Voters()) != 4 || len(pro.Learners()) != 0 {
		t.Fatalf("promote: %+v", pro.Members[4])
	}
	rem, _ := pro.Apply(Change{Kind: KindRemove, Member: Member{ID: 4}})
	if rem.Member(4) != nil || !rem.IsRemoved(4) {
		t.Fatal("remove must forget the member and remember its ID")
	}
	// The removed set is shared between clusters, never changed in place.
	again, _ := rem.Apply(Change{Kind: KindRemove, Member: Member{ID: 3}})
	if pro.IsRemoved(4) || rem.IsRemoved(3) || !again.IsRemoved(3) || !again.IsRemoved(4) {
		t.Fatal("a removal changed the removed set of an earlier cluster")
	}
	add, _ := rem.Apply(Change{Kind: KindAdd, Member: Member{ID: 7, Name: "n", PeerURLs: []string{"http://127.0.0.1:7380"}, ClientURLs: []string{"x"}, Started: true}})
	if m := add.Member(7); m.Started || m.ClientURLs != nil || m.Name != "n" {
		t.Fatalf("an added member is unstarted until it publishes: %+v", m)
	}
	pub, _ := add.Apply(Change{Kind: KindPublish, Member: Member{ID: 7, ClientURLs: []string{"http://127.0.0.1:7379"}}})
	if m := pub.Member(7); !m.Started || m.Name != "n" || m.ClientURLs[0] != "http://127.0.0.1:7379" {
		t.Fatalf("publish: %+v", m)
	}
}

// The cases etcd's own tests pin for adding a voter with members down, and the rest of the
// strict reconfiguration rules.
func TestCheckQuorum(t *testing.T) {
	tests := []struct {
		name     string
		c        *Cluster
		up       []ID
		ch       Change
		want     error
		notStart []ID // members that never started
	}{
		{"add voter 0 of 1 down", cluster(1, 0), []ID{1}, addVoter(9), nil, nil},
		{"add voter 1 of 3 down", cluster(3, 0), []ID{1, 2}, addVoter(9), ErrUnhealthy, nil},
		{"add voter 1 of 4 down", cluster(4, 0), []ID{1, 2, 3}, addVoter(9), nil, nil},
		{"add voter 1 of 5 down", cluster(5, 0), []ID{1, 2, 3, 4}, addVoter(9), nil, nil},
		{"add voter 2 of 5 down", cluster(5, 0), []ID{1, 2, 3}, addVoter(9), ErrUnhealthy, nil},
		{"add voter 2 of 5 never started", cluster(5, 0), []ID{1, 2, 3, 4, 5}, addVoter(9), ErrNotEnoughStarted, []ID{4, 5}},
		{"add learner 1 of 3 down", cluster(3, 0), []ID{1, 2}, Change{Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://a:1"}, IsLearner: true}}, nil, nil},
		{"add learner 2 of 3 down", cluster(3, 0), []ID{1}, Change{Kind: KindAdd, Member: Member{ID: 9, PeerURLs: []string{"http://a:1"}, IsLearner: true}}, ErrUnhealthy, nil},
		{"remove down member, rest keep quorum", cluster(3, 0), []ID{1, 2}, Change{Kind: KindRemove, Member: Member{ID: 3}}, nil, nil},
		{"remove live member, rest lose quorum", cluster(3, 0), []ID{1, 2}, Change{Kind: KindRemove, Member: Member{ID: 2}}, ErrUnhealthy, nil},
		{"remove from healthy two", cluster(2, 0), []ID{1, 2}, Change{Kind: KindRemove, Member: Member{ID: 2}}, nil, nil},
		{"promote unstarted learner", cluster(3, 1), []ID{1, 2, 3}, Change{Kind: KindPromote, Member: Member{ID: 4}}, nil, nil},
		{"promote with 1 of 3 down", cluster(3, 1), []ID{1, 2, 4}, Change{Kind: KindPromote, Member: Member{ID: 4}}, nil, nil},
		{"promote with 2 of 3 down", cluster(3, 1), []ID{1, 4}, Change{Kind: KindPromote, Member: Member{ID: 4}}, ErrUnhealthy, nil},
		{"update url 1 of 3 down", cluster(3, 0), []ID{1, 2}, Change{Kind: KindUpdate, Member: Member{ID: 2, PeerURLs: []string{"http://a:1"}}}, ErrUnhealthy, nil},
		{"update url all up", cluster(3, 0), []ID{1, 2, 3}, Change{Kind: KindUpdate, Member: Member{ID: 2, PeerURLs: []string{"http://a:1"}}}, nil, nil},
		{"invalid change reports its own error", cluster(3, 0), []ID{1, 2, 3}, Change{Kind: KindRemove, Member: Member{ID: 9}}, ErrIDNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := peers(tt.c, tt.up...)
			for _, id := range tt.notStart {
				p.Started[id] = false
			}
			if _, _, err := tt.c.CheckQuorum(tt.ch, p); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReport(t *testing.T) {
	before, after, err := cluster(3, 1).CheckQuorum(Change{Kind: KindPromote, Member: Member{ID: 4}}, peers(cluster(3, 1), 1, 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := QuorumReport{Voters: 3, Learners: 1, StartedVoters: 3, ConnectedVoters: 3, Quorum: 2, FaultTolerance: 1}
	if before != want {
		t.Fatalf("before: %+v", before)
	}
	want = QuorumReport{Voters: 4, Learners: 0, StartedVoters: 4, ConnectedVoters: 4, Quorum: 3, FaultTolerance: 1}
	if after != want {
		t.Fatalf("after: %+v", after)
	}
}
