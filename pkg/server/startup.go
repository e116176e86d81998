package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/discovery"
	"github.com/clusterctl/clusterctl/pkg/server/logfmt"
	"github.com/clusterctl/clusterctl/pkg/server/raftnode"
	"github.com/clusterctl/clusterctl/pkg/server/reconfig"
	"github.com/clusterctl/clusterctl/pkg/storage"
)

// opened is a member's storage, ready for raftnode, with the peers it should know of before
// its membership tells it.
type opened struct {
	store *storage.Store
	state *storage.State
	hints *membership.Cluster
}

// open decides how this member starts and returns its storage.
func (s *Server) open(ctx context.Context) (*opened, error) {
	if s.cfg.ForceNewCluster && !storage.Exists(s.cfg.DataDir) {
		return nil, fmt.Errorf("--force-new-cluster: --data-dir %q holds no member to start a cluster from", s.cfg.DataDir)
	}
	if storage.Exists(s.cfg.DataDir) {
		if s.cfg.Discovery.Enabled() {
			s.cfg.Logger.Info("the discovery token is not used: the data directory already holds a member")
		}
		return s.restart(ctx)
	}
	if s.cfg.Discovery.Enabled() && s.cfg.InitialClusterState == "new" {
		// Bootstrap only: the service names the first members, as --initial-cluster would.
		initial, err := discovery.Initial(ctx, s.cfg.Discovery, s.cfg.Name, s.cfg.InitialAdvertisePeerURLs, s.cfg.Logger)
		if err != nil {
			return nil, err
		}
		s.initial = initial
	}
	// This member's entry, checked against --initial-advertise-peer-urls.
	local, err := datadir.Local(s.initial, s.cfg.Name, s.cfg.InitialAdvertisePeerURLs)
	if err != nil {
		return nil, err
	}
	if s.cfg.InitialClusterState == "new" {
		return s.bootstrapNew()
	}
	return s.join(ctx, local)
}

func (s *Server) restart(ctx context.Context) (_ *opened, err error) {
	st, err := storage.Open(s.cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", s.cfg.DataDir, err)
	}
	// The store stays open only for a member that goes on to run.
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	state, err := st.Load()
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", s.cfg.DataDir, err)
	}
	if state.Removed {
		if s.cfg.ForceNewCluster {
			return nil, fmt.Errorf("--force-new-cluster: --data-dir %q belongs to a member that was removed from its cluster; start from another member's data", s.cfg.DataDir)
		}
		return nil, ErrRemoved
	}
	if s.cfg.ForceNewCluster {
		c, err := raftnode.ForcedFrom(state)
		if err != nil {
			return nil, fmt.Errorf("--force-new-cluster: %w", err)
		}
		if err := s.checkNoLiveQuorum(ctx, state.MemberID, c); err != nil {
			return nil, fmt.Errorf("--force-new-cluster: %w", err)
		}
		if err := raftnode.ForceNewCluster(st, state); err != nil {
			return nil, fmt.Errorf("--force-new-cluster: %w", err)
		}
		if state, err = st.Load(); err != nil {
			return nil, err
		}
		s.cfg.Logger.Warn("forcing a new cluster: every other member is removed", logfmt.MemberKey, state.MemberID.String())
		return &opened{store: st, state: state, hints: state.Cluster}, nil
	}
	if s.cfg.InitialClusterState == "new" && s.cfg.InitialClusterGiven {
		if want := datadir.NewCluster(s.initial, s.cfg.InitialClusterToken); want.ID != state.ClusterID {
			return nil, fmt.Errorf("member %s has already been bootstrapped", state.MemberID)
		}
	}
	if state.Name != s.cfg.Name {
		s.cfg.Logger.Warn("--name differs from the name this data directory was created with; keeping the stored one",
			"flag", s.cfg.Name, "stored", state.Name)
	}
	hints := state.Cluster
	if len(hints.Members) == 0 && state.JoinPeers != nil {
		// Joined, but stopped before the first snapshot came: only the peers it was shown
		// when it joined can reach it.
		hints = state.JoinPeers
	}
	return &opened{store: st, state: state, hints: hints}, nil
}

// bootstrapNew writes the first state of a member of a new cluster.
func (s *Server) bootstrapNew() (*opened, error) {
	c := datadir.NewCluster(s.initial, s.cfg.InitialClusterToken)
	st, err := datadir.Create(s.cfg.DataDir, s.cfg.Name, c)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", s.cfg.DataDir, err)
	}
	return s.loaded(st, c)
}

func (s *Server) loaded(st *storage.Store, hints *membership.Cluster) (*opened, error) {
	state, err := st.Load()
	if err != nil {
		st.Close()
		return nil, err
	}
	return &opened{store: st, state: state, hints: hints}, nil
}

// join is phase two: the member was added through a running member; it asks the cluster for
// the committed membership, checks its flags against it, and starts with an empty log that the
// leader fills with a snapshot.
func (s *Server) join(ctx context.Context, local datadir.Initial) (*opened, error) {
	info, err := s.fetchMembership(ctx, local)
	if err != nil {
		return nil, err
	}
	id, err := checkJoin(s.cfg.Name, s.initial, info.Cluster)
	if err != nil {
		return nil, fmt.Errorf("assign ids error: %w", err)
	}
	empty := membership.NewCluster(info.Cluster.ID, nil)
	st, err := storage.Create(s.cfg.DataDir, storage.Identity{MemberID: id, ClusterID: info.Cluster.ID, Name: s.cfg.Name}, nil, &raftpb.HardState{}, empty, info.Cluster)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", s.cfg.DataDir, err)
	}
	return s.loaded(st, info.Cluster)
}

// fetchMembership asks every other member of --initial-cluster at once and keeps the most
// recent answer, not waiting for the others once the leader has answered: it answered the add of
// this member once it had applied it.
func (s *Server) fetchMembership(ctx context.Context, local datadir.Initial) (*reconfig.ClusterInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	type answer struct {
		info     *reconfig.ClusterInfo
		byLeader bool
		err      error
	}
	var urls []string
	for _, m := range s.initial {
		if m.Name != local.Name {
			urls = append(urls, m.URLs...)
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("--initial-cluster-state existing: --initial-cluster names no other member to join")
	}
	answers := make(chan answer, len(urls))
	for _, u := range urls {
		go func() {
			info, err := reconfig.FetchMembership(ctx, u, s.peerCreds)
			answers <- answer{info: info, byLeader: err == nil && answeredByLeader(info, u), err: err}
		}()
	}
	var best *reconfig.ClusterInfo
	var errs []string
	for range urls {
		a := <-answers
		switch {
		case a.err != nil:
			errs = append(errs, a.err.Error())
		case best == nil || a.info.Applied > best.Applied:
			best = a.info
		}
		if a.byLeader {
			break
		}
	}
	if best == nil {
		sort.Strings(errs)
		hint := ""
		if slices.ContainsFunc(urls, func(u string) bool { return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "unixs://") }) {
			// With TLS 1.3 the peer checks this member's certificate after the handshake
			// has ended on this side: a refusal may arrive here as a broken connection only.
			hint = " (over TLS: a peer that refused this member's certificate logs \"rejected connection\" naming it)"
		}
		return nil, fmt.Errorf("cannot reach any member of --initial-cluster to join: %s%s", strings.Join(errs, "; "), hint)
	}
	return best, nil
}

// answeredByLeader reports whether info, the answer of the member at peer URL u, is the
// leader's own: the member it names as leader has u among its peer URLs.
func answeredByLeader(info *reconfig.ClusterInfo, u string) bool {
	m := info.Cluster.Member(info.Leader)
	return m != nil && slices.Contains(m.PeerURLs, u)
}

// checkJoin compares --initial-cluster with the committed membership and returns this
// member's ID. The wording of the first part of each message is etcd's.
func checkJoin(name string, initial []datadir.Initial, c *membership.Cluster) (membership.ID, error) {
	members := c.List()
	if len(initial) != len(members) {
		return 0, fmt.Errorf("the member count is unequal: --initial-cluster has %d (%s), the cluster has %d (%s)",
			len(initial), describeInitial(initial), len(members), describeMembers(members))
	}
	var local membership.ID
	for _, im := range initial {
		var match *membership.Member
		for _, m := range members {
			if datadir.SameURLs(m.PeerURLs, im.URLs) {
				match = m
			}
		}
		if match == nil {
			return 0, fmt.Errorf("unmatched member while checking PeerURLs: --initial-cluster has %s=%s, the cluster has %s",
				im.Name, strings.Join(im.URLs, ","), describeMembers(members))
		}
		if im.Name == name {
			if match.Name != "" && match.Name != name {
				return 0, fmt.Errorf("unmatched member while checking PeerURLs: %s was added as %q, not %q",
					strings.Join(im.URLs, ","), match.Name, name)
			}
			if match.Started {
				// Its old data is gone, but raft may hold its votes and acknowledgements: coming
				// back empty under the same ID could let it vote twice in one term.
				return 0, fmt.Errorf("unmatched member while checking PeerURLs: member %s (%s) has started before; a member that lost its data must be removed and added again",
					match.ID, name)
			}
			local = match.ID
		}
	}
	return local, nil
}

func describeInitial(initial []datadir.Initial) string {
	var parts []string
	for _, m := range initial {
		parts = append(parts, m.Name+"="+strings.Join(m.URLs, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func describeMembers(members []*membership.Member) string {
	var parts []string
	for _, m := range members {
		parts = append(parts, nameOf(m)+"="+strings.Join(m.PeerURLs, ","))
	}
	sort.Strings(parts)
	return strings.Join(slices.Compact(parts), " ")
}

// liveCheckTimeout bounds the question --force-new-cluster asks the other members: they are
// asked all at once, so a dead or unreachable one holds the start-up this long at most. A live
// member answers from memory, in a round trip.
const liveCheckTimeout = 2 * time.Second

// checkNoLiveQuorum refuses to force a new cluster while the cluster it would leave is healthy:
// the forced member's log removes every other member, and each of them, once it hears of it,
// stops for good. So before anything is rewritten, every other member of c is asked over its
// peer URLs whether it runs; if a quorum of c's voters answers, the cluster does not need
// rescuing. A voter that answers without a leader counts too: a quorum of running voters elects
// one (it may be electing one right now, because this member led and stopped). A member that
// does not answer, or answers for another cluster, does not count.
// --force-new-cluster-bypass-live-check skips the question.
func (s *Server) checkNoLiveQuorum(ctx context.Context, self membership.ID, c *membership.Cluster) error {
	if s.cfg.ForceNewClusterBypassLiveCheck {
		s.cfg.Logger.Warn("--force-new-cluster-bypass-live-check: not asking the other members whether they still have a quorum")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, liveCheckTimeout)
	defer cancel()
	type answer struct {
		m      *membership.Member
		alive  bool
		leader membership.ID // zero: no leader known to it
	}
	var others []*membership.Member
	for _, m := range c.List() {
		if m.ID != self {
			others = append(others, m)
		}
	}
	answers := make(chan answer, len(others))
	for _, m := range others {
		go func() {
			alive, leader := s.peerLeader(ctx, c.ID, m)
			answers <- answer{m, alive, leader}
		}()
	}
	voters := c.Voters()
	var live []string
	var leader membership.ID
	for range others {
		a := <-answers
		if !a.alive || a.m.IsLearner {
			continue
		}
		live = append(live, nameOf(a.m))
		leader = max(leader, a.leader)
	}
	if quorum := len(voters)/2 + 1; len(live) >= quorum {
		sort.Strings(live)
		following := "are electing a leader"
		if leader != 0 {
			following = "follow leader " + leader.String()
		}
		return fmt.Errorf("refused: %d of the other voters (%s) are running and %s, a quorum of the cluster's %d voters: "+
			"the cluster is healthy, and forcing a new cluster here would remove them; restart this member without --force-new-cluster "+
			"(--force-new-cluster-bypass-live-check overrides this: see docs/runbooks/majority-loss.md)",
			len(live), strings.Join(live, ", "), following, len(voters))
	}
	return nil
}

// peerLeader asks m, at each of its peer URLs in turn, whether it runs in this cluster and which
// leader it follows (zero for none yet).
func (s *Server) peerLeader(ctx context.Context, cluster membership.ID, m *membership.Member) (alive bool, leader membership.ID) {
	for _, u := range m.PeerURLs {
		info, err := reconfig.FetchMembership(ctx, u, s.peerCreds)
		if err != nil {
			continue
		}
		if info.Cluster == nil || info.Cluster.ID != cluster {
			return false, 0
		}
		return true, info.Leader
	}
	return false, 0
}

func nameOf(m *membership.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return m.ID.String()
}
