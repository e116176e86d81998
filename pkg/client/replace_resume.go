package client

import (
	"context"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/wire"
)

// ResumesAfter decides, from clusterd's membership history, whether a replacement that finds
// neither its old member nor its new one was stopped between the removal of the dead old member
// and the add of the new one, so that the same command line goes on with the add. last is the
// newest event of the member the old reference names; since is the events after it, oldest
// first, complete (the history drops its oldest events only).
//
// It does when last is that member's removal by a replacement that removes first (a finished
// live-order replacement's removal says wire.ViaMemberReplace) and no member was added since,
// by anyone: an add after the removal may be this replacement's, under another name or removed
// again, or an operator's by hand, and one member too many is worse than exit 10 and its next
// step. How long ago the removal was does not matter: nothing was added since, so the cluster
// is still short of the member the replacement was to add. A history that no longer holds the
// removal (--max-history) cannot tell, and does not resume. The history does not hold the new
// member the stopped run was to add: a run again under another name adds that one, as its
// command line asks.
func ResumesAfter(last membership.Event, since []membership.Event) bool {
	if last.Change != membership.KindRemove.String() || last.By.Via != wire.ViaMemberReplaceRemoveFirst {
		return false
	}
	return !slices.ContainsFunc(since, func(e membership.Event) bool {
		return e.RaftIndex > last.RaftIndex && strings.HasPrefix(e.Change, membership.KindAdd.String()) // add, add-learner
	})
}

// historyPage is how many of the newest events RemovedFirst reads first; it doubles until the
// events read reach back to the removal. Membership changes are rare: the first page mostly does.
const historyPage = 16

// RemovedFirst reads clusterd's membership history (linearizable) for a replacement that finds
// neither the member oldRef names nor its new member, and returns the old member's removal when
// ResumesAfter says the replacement goes on from it; nil otherwise, and on etcd, which keeps no
// history (a *HistoryUnsupportedError).
func (c *Client) RemovedFirst(ctx context.Context, oldRef string) (*membership.Event, error) {
	h, err := c.MemberHistory(ctx, HistoryQuery{Linearizable: true, Member: oldRef, Limit: 1})
	if err != nil || len(h.Events) == 0 {
		return nil, err
	}
	last := h.Events[len(h.Events)-1]
	if !ResumesAfter(last, nil) {
		return nil, nil
	}
	// The events since the removal: the newest ones, more of them until they reach it or are all
	// there are. Bounded by the history's length.
	for limit := historyPage; ; limit *= 2 {
		all, err := c.MemberHistory(ctx, HistoryQuery{Linearizable: true, Limit: limit})
		if err != nil {
			return nil, err
		}
		if len(all.Events) < limit || all.Events[0].RaftIndex <= last.RaftIndex {
			if ResumesAfter(last, all.Events) {
				return &last, nil
			}
			return nil, nil
		}
	}
}

// AddedByReplace reports whether clusterd's membership history (linearizable) says member id was
// added by member replace: then a member of a rebuild that is alive with the new member's name
// and peer URLs is the replacement's new member, promoted, and not the old member still running.
// On etcd, which keeps no history, it returns false and a *HistoryUnsupportedError.
func (c *Client) AddedByReplace(ctx context.Context, id uint64) (bool, error) {
	h, err := c.MemberHistory(ctx, HistoryQuery{Linearizable: true, Member: FormatID(id)})
	if err != nil {
		return false, err
	}
	for _, e := range h.Events {
		if uint64(e.MemberID) == id && strings.HasPrefix(e.Change, membership.KindAdd.String()) {
			return e.By.Via == wire.ViaMemberReplace, nil
		}
	}
	return false, nil
}
