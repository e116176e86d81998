package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/pkg/rpcerr"
)

func TestFindReplacement(t *testing.T) {
	old := Member{ID: 0xa, Name: "infra1", PeerURLs: []string{"http://10.0.0.2:2380"}, Started: true}
	other := Member{ID: 0xb, Name: "infra2", PeerURLs: []string{"http://10.0.0.3:2380"}, Started: true}
	learner := Member{ID: 0xc, Name: "infra3", PeerURLs: []string{"http://10.0.0.4:2380"}, IsLearner: true}
	unnamed := learner
	unnamed.Name = "" // etcd, before the member starts
	moved := learner
	moved.PeerURLs = []string{"http://10.0.0.5:2380"}
	urls := []string{"http://10.0.0.4:2380"}
	for _, tt := range []struct {
		name     string
		members  []Member
		ref      string
		wantOld  bool
		wantNew  uint64
		wantErr  error
		wantCode string
	}{
		{"nothing done", []Member{old, other}, "infra1", true, 0, nil, ""},
		{"by ID", []Member{old, other}, "a", true, 0, nil, ""},
		{"added", []Member{old, other, learner}, "infra1", true, 0xc, nil, ""},
		{"added, no name yet", []Member{old, other, unnamed}, "infra1", true, 0xc, nil, ""},
		{"old gone", []Member{other, learner}, "infra1", false, 0xc, nil, ""},
		{"old gone, hex ref", []Member{other, learner}, "a", false, 0xc, nil, ""},
		{"nothing there", []Member{other}, "infra1", false, 0, rpcerr.ErrMemberNotFound, ""},
		{"hex ref, nothing there", []Member{other}, "e3", false, 0, rpcerr.ErrMemberNotFound, ""},
		{"name with other URLs", []Member{old, moved}, "infra1", false, 0, rpcerr.ErrMemberNameExists, "has peer URLs http://10.0.0.5:2380, not http://10.0.0.4:2380"},
		{"URL under another name", []Member{old, other}, "infra1", false, 0, rpcerr.ErrPeerURLExists, ""},
		// the new member's name for the old one's: a rebuild, and this learner the new member
		{"old named as the new member", []Member{old, learner}, "c", false, 0xc, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := urls
			if tt.name == "URL under another name" {
				in = other.PeerURLs
			}
			r, err := FindReplacement(&ListResult{Members: tt.members}, tt.ref, "infra3", in)
			if tt.wantErr != nil || tt.wantCode != "" {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || (tt.wantCode != "" && !contains(err.Error(), tt.wantCode)) {
					t.Fatalf("err = %v, want %v %q", err, tt.wantErr, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (r.Old != nil) != tt.wantOld || (r.Old != nil && r.Old.ID != 0xa) {
				t.Errorf("old = %+v, want present %v", r.Old, tt.wantOld)
			}
			if got := uint64(0); r.New != nil {
				got = r.New.ID
				if got != tt.wantNew {
					t.Errorf("new = %x, want %x", got, tt.wantNew)
				}
			} else if tt.wantNew != 0 {
				t.Errorf("new not found, want %x", tt.wantNew)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestFindRebuild: the new member under the old one's name, a machine rebuilt under its old
// identity, at each point a run can stop at: the voter is the old member (Settle asks it), the
// learner the new one; nothing of either is the removal done and the add not.
func TestFindRebuild(t *testing.T) {
	old := Member{ID: 0xa, Name: "infra1", PeerURLs: []string{"http://10.0.0.2:2380"}, Started: true}
	other := Member{ID: 0xb, Name: "infra2", PeerURLs: []string{"http://10.0.0.3:2380"}, Started: true}
	rebuilt := Member{ID: 0xd, Name: "infra1", PeerURLs: old.PeerURLs, IsLearner: true}
	unnamed := rebuilt
	unnamed.Name = ""
	promoted := rebuilt
	promoted.IsLearner, promoted.Started = false, true
	moved := []string{"http://10.0.0.9:2380"}
	for _, tt := range []struct {
		name             string
		members          []Member
		ref              string
		urls             []string
		alive            bool
		wantOld, wantNew uint64
		removeFirst      bool
	}{
		{"dead, same URLs", []Member{old, other}, "infra1", old.PeerURLs, false, 0xa, 0, true},
		{"dead, by ID", []Member{old, other}, "000000000000000a", old.PeerURLs, false, 0xa, 0, true},
		{"dead, new URLs", []Member{old, other}, "infra1", moved, false, 0xa, 0, true},
		{"removed", []Member{other}, "infra1", old.PeerURLs, false, 0, 0, false},
		{"added", []Member{other, rebuilt}, "infra1", old.PeerURLs, false, 0, 0xd, false},
		{"added, no name yet (etcd)", []Member{other, unnamed}, "infra1", old.PeerURLs, false, 0, 0xd, false},
		{"promoted and answering", []Member{other, promoted}, "infra1", old.PeerURLs, true, 0, 0xd, false},
		{"alive, new URLs: the old one, added first", []Member{old, other}, "infra1", moved, true, 0xa, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FindReplacement(&ListResult{Members: tt.members}, tt.ref, "infra1", tt.urls)
			if err != nil {
				t.Fatal(err)
			}
			r.Settle(tt.alive, tt.urls)
			var gotOld, gotNew uint64
			if r.Old != nil {
				gotOld = r.Old.ID
			}
			if r.New != nil {
				gotNew = r.New.ID
			}
			if gotOld != tt.wantOld || gotNew != tt.wantNew || r.RemoveFirst != tt.removeFirst || !r.Rebuild {
				t.Errorf("old %x new %x removeFirst %v rebuild %v; want %x %x %v true", gotOld, gotNew, r.RemoveFirst, r.Rebuild, tt.wantOld, tt.wantNew, tt.removeFirst)
			}
		})
	}
}
