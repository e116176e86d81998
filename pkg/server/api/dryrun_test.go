package api

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// A dry run judges the change the Cluster service's handler of its kind would make: the fields
// that kind takes and nothing else, the peer URLs checked as that handler checks them; a publish,
// a member's own, is no client's to ask about.
func TestJudged(t *testing.T) {
	urls := []string{"http://127.0.0.1:2380"}
	full := membership.Member{ID: 7, Name: "a", PeerURLs: urls, ClientURLs: urls, IsLearner: true, Started: true}
	by := membership.Origin{CN: "root", Via: "member replace"}
	for _, tt := range []struct {
		kind membership.Kind
		want membership.Member
	}{
		{membership.KindAdd, membership.Member{Name: "a", PeerURLs: urls, IsLearner: true}},
		{membership.KindUpdate, membership.Member{ID: 7, PeerURLs: urls}},
		{membership.KindRemove, membership.Member{ID: 7}},
		{membership.KindPromote, membership.Member{ID: 7}},
	} {
		got, err := judged(membership.Change{Kind: tt.kind, Member: full, By: by})
		if want := (membership.Change{Kind: tt.kind, Member: tt.want}); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("kind %d: %+v, %v; want %+v", tt.kind, got, err, want)
		}
	}
	for _, k := range []membership.Kind{membership.KindAdd, membership.KindUpdate} {
		if _, err := judged(membership.Change{Kind: k, Member: membership.Member{PeerURLs: []string{"ftp://x"}}}); !errors.Is(err, membership.ErrInvalidPeerURLs) {
			t.Errorf("kind %d with a bad peer URL: %v", k, err)
		}
	}
	for _, k := range []membership.Kind{membership.KindPublish, 0, 99} {
		if _, err := judged(membership.Change{Kind: k, Member: full}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("kind %d: %v, want InvalidArgument", k, err)
		}
	}
}
