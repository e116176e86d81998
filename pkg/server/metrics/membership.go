package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// The outcomes of a decided change.
const (
	outcomeApplied = "applied" // committed and applied; the answer is the new membership
	outcomeRefused = "refused" // a membership rule refused it, before proposing or at apply
	outcomeFailed  = "failed"  // no answer from the cluster: no leader, timeout, lost, stopped
)

// refusalReasons names each membership refusal for the reason label. Every error of
// pkg/membership must be here (a test parses its errors.go to make sure); an error found
// nowhere here is a failure, not a refusal.
var refusalReasons = []struct {
	err    error
	reason string
}{
	{membership.ErrIDNotFound, "member_not_found"},
	{membership.ErrIDExists, "member_id_exists"},
	{membership.ErrPeerURLExists, "peer_urls_exist"},
	{membership.ErrInvalidPeerURLs, "invalid_peer_urls"},
	{membership.ErrNotEnoughStarted, "not_enough_started"},
	{membership.ErrUnhealthy, "unhealthy"},
	{membership.ErrPromoteVoter, "promote_voter"},
	{membership.ErrLearnerNotReady, "learner_not_ready"},
	{membership.ErrTooManyLearners, "too_many_learners"},
	{membership.ErrIDRemoved, "member_removed"},
	{membership.ErrNameExists, "name_exists"},
	{membership.ErrInvalidName, "invalid_name"},
	{membership.ErrURLIsClientURL, "peer_url_is_client_url"},
}

// changeKinds are the kinds whose series exist from the start.
var changeKinds = []membership.Kind{
	membership.KindAdd, membership.KindRemove, membership.KindUpdate,
	membership.KindPromote, membership.KindPublish,
}

func (m *Metrics) initMembership(f promauto.Factory) {
	m.changes = f.NewCounterVec(prometheus.CounterOpts{
		Name: "clusterd_membership_changes_total",
		Help: "Membership changes decided by this member while leader, by kind and outcome (applied, refused, failed).",
	}, []string{"kind", "outcome"})
	m.refusals = f.NewCounterVec(prometheus.CounterOpts{
		Name: "clusterd_membership_refusals_total",
		Help: "Membership changes refused by this member while leader, by the rule that refused them.",
	}, []string{"reason"})
	for _, k := range changeKinds {
		for _, o := range []string{outcomeApplied, outcomeRefused, outcomeFailed} {
			m.changes.WithLabelValues(k.String(), o)
		}
	}
	for _, r := range refusalReasons {
		m.refusals.WithLabelValues(r.reason)
	}
	m.forcedOut = f.NewGauge(prometheus.GaugeOpts{
		Name: "clusterd_membership_forced_out",
		Help: "1 while a voter of this member's membership answers that --force-new-cluster removed this member and a majority of the voters does not confirm the removal: two clusters may answer under one cluster ID.",
	})
}

// ForcedOut sets what the member's last removal check found: whether a voter of its membership
// answered that it forced a new cluster without this member, unconfirmed by a majority. Set by
// that check, not read from State: the finding is a peer's answer, which the node does not hold.
func (m *Metrics) ForcedOut(found bool) {
	if m == nil {
		return
	}
	m.forcedOut.Set(boolValue(found))
}

// ChangeDecided counts one membership change where it is decided: on the leader, once its
// answer is known (reconfig's decide, after the wait for the applied entry or the refusal), so
// each change is counted once in the whole cluster and never on the member that forwarded it.
// err is the answer: nil when applied, a pkg/membership error when refused (also counted by
// reason), anything else when the cluster gave no answer. A dry run is not a change: do not
// call it for one.
func (m *Metrics) ChangeDecided(kind membership.Kind, err error) {
	if m == nil {
		return
	}
	outcome := outcomeApplied
	if err != nil {
		outcome = outcomeFailed
		if reason, ok := refusalReason(err); ok {
			outcome = outcomeRefused
			m.refusals.WithLabelValues(reason).Inc()
		}
	}
	m.changes.WithLabelValues(kind.String(), outcome).Inc()
}

func refusalReason(err error) (string, bool) {
	for _, r := range refusalReasons {
		if errors.Is(err, r.err) {
			return r.reason, true
		}
	}
	return "", false
}
