package client

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

func TestResumesAfter(t *testing.T) {
	via := func(v string) membership.Origin { return membership.Origin{CN: "root", Via: v} }
	removedFirst := membership.Event{RaftIndex: 20, Change: "remove", MemberID: 0xa, Name: "infra1", By: via(wire.ViaMemberReplaceRemoveFirst)}
	at := func(i uint64, change string, by membership.Origin) membership.Event {
		return membership.Event{RaftIndex: i, Change: change, MemberID: membership.ID(0x100 + i), Name: "x", By: by}
	}
	for _, tt := range []struct {
		name  string
		last  membership.Event
		since []membership.Event
		want  bool
	}{
		{"removed first, nothing since", removedFirst, nil, true},
		{"removed first, the removal itself and older adds in the page", removedFirst,
			[]membership.Event{at(12, "add-learner", via(wire.ViaMemberReplace)), at(15, "add", membership.Origin{}), removedFirst}, true},
		{"removed first, then restarts, a promotion, other removals", removedFirst,
			[]membership.Event{removedFirst, at(21, "publish", membership.Origin{Clusterd: membership.OriginPublish}), at(22, "promote", via("")), at(23, "remove", via(wire.ViaMemberPrune))}, true},
		// a finished live-order replacement ends with the old member's removal
		{"removed last by a finished replacement", membership.Event{RaftIndex: 20, Change: "remove", By: via(wire.ViaMemberReplace)}, nil, false},
		{"removed by hand", membership.Event{RaftIndex: 20, Change: "remove", By: via("")}, nil, false},
		{"removed by prune", membership.Event{RaftIndex: 20, Change: "remove", By: via(wire.ViaMemberPrune)}, nil, false},
		// the old member's last event is no removal: it was added again, or is there
		{"added again after the removal", membership.Event{RaftIndex: 25, Change: "add", By: via("")}, nil, false},
		{"promoted", membership.Event{RaftIndex: 25, Change: "promote", By: via(wire.ViaMemberReplace)}, nil, false},
		// a finished remove-first replacement: its add follows, under whatever name
		{"the replacement's learner added since", removedFirst, []membership.Event{removedFirst, at(21, "add-learner", via(wire.ViaMemberReplace))}, false},
		{"an operator's add since", removedFirst, []membership.Event{at(21, "add", via(""))}, false},
		{"a learner added and removed again since", removedFirst,
			[]membership.Event{at(21, "add-learner", via("")), at(22, "remove", via(""))}, false},
		{"another replacement's add since", removedFirst,
			[]membership.Event{at(21, "remove", via(wire.ViaMemberReplaceRemoveFirst)), at(22, "add-learner", via(wire.ViaMemberReplace))}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResumesAfter(tt.last, tt.since); got != tt.want {
				t.Errorf("ResumesAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

// A later mark replaces an earlier one: the server records the first value it is sent.
func TestWithViaReplaces(t *testing.T) {
	ctx := WithVia(WithVia(context.Background(), wire.ViaMemberReplace), wire.ViaMemberReplaceRemoveFirst)
	md, _ := metadata.FromOutgoingContext(ctx)
	if got := md.Get(wire.MDVia); len(got) != 1 || got[0] != wire.ViaMemberReplaceRemoveFirst {
		t.Errorf("via = %q, want only %q", got, wire.ViaMemberReplaceRemoveFirst)
	}
	if !wire.KnownVia(wire.ViaMemberReplaceRemoveFirst) {
		t.Errorf("%q is not recorded", wire.ViaMemberReplaceRemoveFirst)
	}
}
