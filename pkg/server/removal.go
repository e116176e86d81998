package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/server/transport"
)

// watchRemoval catches a removal this member missed, and writes its tombstone only on proof.
// A voter that lost its leader campaigns and is refused by its peers as removed, but a learner
// never campaigns, and a member removed before it caught up has no leader at all: so when the
// leader has been silent for two election timeouts, or a peer says this member is removed (a
// Removed notice, or a refusal: transport.RemovalClaims), the member asks the cluster. One
// peer's word is never the proof: see removalConfirmed. A claim the cluster does not confirm is
// logged (once a minute at most: the claims go on while a stale peer refuses this member) and
// ignored. Claims are looked into once per election timeout at most, and after each one the
// cluster did not confirm, half as often, down to once a minute: a stale member refused again
// and again, or a forger, does not keep this member asking; the leader's silence still makes it
// ask every two election timeouts.
//
// A member that joined and has not applied a membership yet (no snapshot came) asks the members
// it was shown when it joined (hints): those are the voters that decided its addition.
//
// When a voter of this member's membership answers that --force-new-cluster removed this member
// and the majority does not confirm it, two clusters may answer under one cluster ID: the member
// says so at error level (logUnconfirmed), in its Status errors (conditions) and in
// clusterd_membership_forced_out, until a check no longer finds it; while it stands, the check
// is made again at least once a minute. It stops nothing: that voter's word is one peer's.
func watchRemoval(ctx context.Context, m *running, creds credentials.TransportCredentials, electionTimeout time.Duration) {
	node, log := m.node, m.log
	t := time.NewTicker(2 * electionTimeout)
	defer t.Stop()
	var lastClaim, lastLogged, lastChecked time.Time
	var forcedOut bool
	claimGap := electionTimeout
	for {
		claimed := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.tr.RemovalClaims():
			if time.Since(lastClaim) < claimGap {
				continue
			}
			claimed, lastClaim = true, time.Now()
		}
		recheck := forcedOut && time.Since(lastChecked) >= time.Minute
		if lead := node.Leader(); !claimed && !recheck && (lead == node.ID() || lead != 0 && node.HeardWithin(lead, 2*electionTimeout)) {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, electionTimeout)
		known := node.Cluster()
		if len(known.Voters()) == 0 && m.hints != nil {
			known = m.hints
		}
		// Told at the moment of the removal, the voters may not all have applied it yet: ask
		// again until they do. The leader silent for two election timeouts: they have.
		v := removalConfirmed(qctx, node.ID(), m.state.ClusterID, known, node.HoldsOwnRemoval(), claimed, creds)
		cancel()
		lastChecked = time.Now()
		if v.yes >= v.need || v.need == 0 {
			log.Error("a majority of the cluster's voters confirm that this member has been removed from the cluster",
				"confirmed", v.yes, "needed", v.need)
			m.metrics.ForcedOut(false)
			node.MarkRemoved()
			return
		}
		forcedOut = len(v.forced) > 0
		m.metrics.ForcedOut(forcedOut)
		m.noteForcedOut(v.forced)
		if claimed {
			claimGap = min(2*claimGap, time.Minute)
		}
		if (claimed || forcedOut) && time.Since(lastLogged) >= time.Minute {
			lastLogged = time.Now()
			logUnconfirmed(log, v, known)
		}
	}
}

// noteForcedOut keeps the forced removals a check found for Status's errors (conditions), one
// line each voter.
func (m *running) noteForcedOut(forced []forcedRemoval) {
	if len(forced) == 0 {
		m.forcedOut.Store(nil)
		return
	}
	var lines []string
	for _, f := range forced {
		lines = append(lines, fmt.Sprintf("clusterd: voter %s says --force-new-cluster removed this member at index %d: two clusters may answer under one cluster ID", f.peer, f.removal.RaftIndex))
	}
	m.forcedOut.Store(&lines)
}

// conditions are this member's own findings for Status's errors: the forced removals the last
// removal check found. The slice is never changed once stored.
func (m *running) conditions() []string {
	if lines := m.forcedOut.Load(); lines != nil {
		return *lines
	}
	return nil
}

// logUnconfirmed says that a claim of this member's removal was not confirmed: for each voter
// that answered that --force-new-cluster removed this member, that two clusters may answer
// and what the operator does; otherwise that the claim is ignored.
func logUnconfirmed(log *slog.Logger, v removalVerdict, known *membership.Cluster) {
	for _, f := range v.forced {
		var urls []string
		if m := known.Member(f.peer); m != nil {
			urls = m.PeerURLs
		}
		log.Error("a voter of this member's cluster says --force-new-cluster removed this member, and a majority of the cluster's voters does not confirm it: two clusters may answer under one cluster ID. Stop this member; if the forced cluster is the one to keep, wipe this member's data directory and add it to that cluster again",
			"peer", f.peer.String(), "peer-urls", urls, "forced-index", f.removal.RaftIndex, "forced-term", f.removal.Term,
			"confirmed", v.yes, "needed", v.need)
	}
	if len(v.forced) == 0 {
		log.Warn("a peer says this member has been removed, and a majority of the cluster's voters does not confirm it: ignored (a stale or forged notice, or a member forced into a new cluster)",
			"confirmed", v.yes, "needed", v.need)
	}
}

// removalVerdict is what the voters answered: how many confirm this member's removal, how many
// must (0: confirmed otherwise, see removalConfirmed), and which voters of the membership asked
// answered with a removal that --force-new-cluster wrote.
type removalVerdict struct {
	yes, need int
	forced    []forcedRemoval
}

// forcedRemoval is a voter's answer that it forced a new cluster without this member: the peer
// and the removal event its history holds.
type forcedRemoval struct {
	peer    membership.ID
	removal membership.Event
}

// removalConfirmed asks every voter of membership c (this member's applied one, or the members
// it was shown when it joined) but itself whether it has applied this member's removal, and
// returns how many confirm it and how many must: a majority of c's voters, or 0 when it is
// confirmed otherwise (below). This member, if it is one of them, confirms it when its own log
// holds the entry that removes it (held: it acknowledged it, raftnode.Node.HoldsOwnRemoval),
// since a removal commits only with a majority of the configuration it changes. The members this
// member knows are asked at the peer URLs its own membership holds (and those a confirming one
// names, below, at the URLs its membership holds), and an answer counts only for the cluster
// this member belongs to: no stranger, and no single member of a larger cluster
// (a stale one, or one forced into a new cluster while the others ran), can make it remove
// itself. Nor can the other of two voters forced into a new cluster: the forced removal was never
// in this member's log.
//
// A member removed while it was away may find that the cluster went on changing: some of the
// voters it knew were removed and stopped too, and no majority of them is left to answer, and
// voters it never knew were added. So when a voter it knew confirms, and its history shows a
// removal the cluster decided (not one that --force-new-cluster wrote), the voters of that
// voter's membership are asked as well; the member is then confirmed by at least two voters
// when every one that answers confirms it. A forced member's word therefore never carries that
// of the members it added, and a member forced into a new cluster is one voter, whom the voters
// of the old cluster that still run contradict, answering that this member is one of theirs.
// Each voter of c that confirms with a removal --force-new-cluster wrote is named in the
// verdict's forced (when the removal is not confirmed: the caller reports them).
func removalConfirmed(ctx context.Context, self, cluster membership.ID, c *membership.Cluster, held, patient bool, creds credentials.TransportCredentials) removalVerdict {
	voters := c.Voters()
	need := len(voters)/2 + 1
	yes := 0
	if held && slices.Contains(voters, self) {
		yes++
	}
	if yes >= need {
		return removalVerdict{yes: yes, need: need}
	}
	// A voter that has not applied the removal yet may do so a heartbeat later (the leader
	// applies first, and its followers when they next hear the commit index): patient, each is
	// asked again, with a short pause, until it confirms or ctx ends. Every answer is waited
	// for, since a patient voter's no comes only then; once a majority of the voters this
	// member knew confirmed, the others are called off.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		id                   membership.ID
		known, yes, answered bool
		info                 *reconfig.ClusterInfo
	}
	answers := make(chan answer)
	asked := map[membership.ID]bool{self: true}
	pending := 0
	askAll := func(ids []membership.ID, in *membership.Cluster, known bool) {
		for _, id := range ids {
			if asked[id] {
				continue
			}
			asked[id] = true
			pending++
			m := in.Member(id)
			go func() {
				a := answer{id: id, known: known}
				a.yes, a.answered, a.info = ask(ctx, m, cluster, self, patient, creds)
				answers <- a
			}()
		}
	}
	askAll(voters, c, true)
	knownYes, all, denied := yes, yes, false
	var forced []forcedRemoval
	for ; pending > 0; pending-- {
		a := <-answers
		switch {
		case knownYes >= need:
			// Decided: the answers of those called off are only drained.
		case a.yes:
			all++
			if !a.known {
				continue
			}
			if knownYes++; knownYes >= need {
				cancel()
				continue
			}
			switch r := a.info.Removal; {
			case r == nil:
			case r.By.Clusterd == membership.OriginForceNewCluster:
				forced = append(forced, forcedRemoval{peer: a.id, removal: *r})
			default:
				askAll(a.info.Cluster.Voters(), a.info.Cluster, false)
			}
		case a.answered:
			denied = true
		}
	}
	switch {
	case knownYes >= need:
		return removalVerdict{yes: knownYes, need: need}
	case all >= 2 && knownYes > 0 && !denied:
		return removalVerdict{yes: all}
	}
	return removalVerdict{yes: knownYes, need: need, forced: forced}
}

// ask asks member m, at each of its peer URLs until one answers, whether it has applied the
// removal of self from cluster; answered is false when none answered, and info is the answer of
// a member that confirms.
func ask(ctx context.Context, m *membership.Member, cluster, self membership.ID, patient bool, creds credentials.TransportCredentials) (yes, answered bool, info *reconfig.ClusterInfo) {
	for _, u := range m.PeerURLs {
		conn, err := transport.Dial(u, creds)
		if err != nil {
			continue
		}
		yes, answered, info = askOn(ctx, conn, u, cluster, self, patient)
		conn.Close()
		if answered {
			return yes, true, info
		}
	}
	return false, false, nil
}

// askOn asks on conn, a connection to peer URL u; patient, it asks again every 10 ms while the
// member answers no, until ctx ends (short and fixed: followers apply a heartbeat after the
// leader, and the removed member's clients wait meanwhile).
func askOn(ctx context.Context, conn *grpc.ClientConn, u string, cluster, self membership.ID, patient bool) (yes, answered bool, info *reconfig.ClusterInfo) {
	for {
		info, err := reconfig.RemovalOn(ctx, conn, u, self)
		if err != nil {
			return false, answered, nil
		}
		if info.Cluster != nil && info.Cluster.ID == cluster && info.Cluster.IsRemoved(self) {
			return true, true, info
		}
		if !patient {
			return false, true, nil
		}
		answered = true
		select {
		case <-ctx.Done():
			return false, true, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}
