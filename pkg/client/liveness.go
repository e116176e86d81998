package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Liveness is every source's word on whether one member is alive, gathered at once (Liveness of
// a Client): the member's own client URLs, the endpoints the command was given (one whose status
// names the member answered as it, whatever URL the member advertises), and the leader's own
// view of its peers (etcd_network_active_peers on the leader's /metrics, which both etcd and
// clusterd serve on their client URLs). member prune and member replace judge by it alone.
type Liveness struct {
	// OwnURL says the member answered on one of its advertised client URLs.
	OwnURL bool
	// Endpoint is a given endpoint that answered with the member's ID, "" when none did.
	Endpoint string
	// Leader is the leader whose view was asked, 0 when no answer named one. Leads says the
	// member is that leader.
	Leader uint64
	Leads  bool
	// LeaderSees is the leader's view: it counts the member as a live peer. It means something
	// only when LeaderErr is nil and Leader is set.
	LeaderSees bool
	// LeaderErr is why the leader's view could not be read.
	LeaderErr error
}

// Alive reports whether any source says the member is alive.
func (l Liveness) Alive() bool {
	return l.OwnURL || l.Endpoint != "" || l.Leads || l.leaderKnows() && l.LeaderSees
}

// Gone reports whether every source agrees the member is not alive: it answers nowhere, and the
// leader's view was read and does not count it. A member of which the leader's view is unknown
// is neither Alive nor Gone.
func (l Liveness) Gone() bool { return !l.Alive() && l.leaderKnows() }

func (l Liveness) leaderKnows() bool { return l.Leader != 0 && l.LeaderErr == nil }

// Evidence says in words what each source said, for a dry run and a warning; members, the
// membership, names the leader.
func (l Liveness) Evidence(members []Member) string {
	leaderName := FormatID(l.Leader)
	if i := slices.IndexFunc(members, func(m Member) bool { return m.ID == l.Leader && m.Name != "" }); i >= 0 {
		leaderName = members[i].Name
	}
	out := []string{"no answer on its client URLs"}
	if l.OwnURL {
		out[0] = "answers on its client URL"
	}
	if l.Endpoint != "" {
		out = append(out, "answers as itself on "+l.Endpoint)
	}
	switch {
	case l.Leads:
		out = append(out, "it leads")
	case l.Leader == 0:
		out = append(out, "no leader to ask")
	case l.LeaderErr != nil:
		out = append(out, fmt.Sprintf("leader %s's view unknown (%v)", leaderName, l.LeaderErr))
	case l.LeaderSees:
		out = append(out, fmt.Sprintf("leader %s hears it", leaderName))
	default:
		out = append(out, fmt.Sprintf("leader %s does not hear it", leaderName))
	}
	return strings.Join(out, ", ")
}

// Liveness asks every source at once about each member of members (from list, the membership
// now, which names the leader's client URLs), each question within within, and returns each
// member's evidence by ID. A member not started has no client URL: only the endpoints and the
// leader can speak for it.
func (c *Client) Liveness(ctx context.Context, list *ListResult, members []Member, within time.Duration) map[uint64]*Liveness {
	out := make(map[uint64]*Liveness, len(members))
	for _, m := range members {
		out[m.ID] = &Liveness{}
	}
	given := c.StatusOfEach(ctx, c.GivenEndpoints(), within)
	sts := make([]*Status, len(given))
	for i, g := range given {
		sts[i] = g.Status
		if g.Status == nil {
			continue
		}
		if l := out[g.Status.Header.MemberID]; l != nil && l.Endpoint == "" {
			l.Endpoint = g.Endpoint
		}
	}
	// Each member's own question writes its own Liveness.
	var own sync.WaitGroup
	for _, m := range members {
		own.Go(func() { out[m.ID].OwnURL = c.Answers(ctx, m, within) })
	}
	view, leader, err := c.leaderView(ctx, list, leaderNamed(sts), within)
	own.Wait()
	for id, l := range out {
		l.Leader, l.Leads, l.LeaderErr = leader, id == leader, err
		l.LeaderSees = view[id]
	}
	return out
}

// leaderNamed is the leader the answers name: the member that says it leads in the highest term
// (LeaderOf), else the leader a follower names in the highest term; 0 when none does.
func leaderNamed(sts []*Status) uint64 {
	if lead := LeaderOf(sts); lead != nil {
		return lead.Header.MemberID
	}
	var leader, term uint64
	for _, st := range sts {
		if st != nil && st.Leader != 0 && st.RaftTerm >= term {
			leader, term = st.Leader, st.RaftTerm
		}
	}
	return leader
}

// leaderView reads the leader's etcd_network_active_peers: the leader is the one the given
// endpoints' answers name (leader), else the one list marks. It returns the peers the leader
// counts as live, the leader's ID (0 when none is known) and why its view could not be read.
func (c *Client) leaderView(ctx context.Context, list *ListResult, leader uint64, within time.Duration) (map[uint64]bool, uint64, error) {
	for _, m := range list.Members {
		if leader == 0 && m.IsLeader {
			leader = m.ID
		}
		if m.ID == leader && leader != 0 {
			if len(m.ClientURLs) == 0 {
				return nil, leader, errors.New("the leader lists no client URL")
			}
			ctx, cancel := context.WithTimeout(ctx, within)
			defer cancel()
			view, err := c.ActivePeers(ctx, m.ClientURLs[0], leader)
			return view, leader, err
		}
	}
	if leader == 0 {
		return nil, 0, nil
	}
	return nil, leader, errors.New("the leader is not in the member list")
}

// activePeersMetric is etcd's gauge of its live peer connections, which clusterd serves too
// (from its liveness rule): labels Local and Remote, member IDs in hex.
const activePeersMetric = "etcd_network_active_peers"

// serverIDMetric names the member whose page it is.
const serverIDMetric = "etcd_server_id"

// maxMetricsBytes bounds how much of a /metrics page is read: etcd's is some hundreds of KiB.
const maxMetricsBytes = 16 << 20

// ActivePeers reads, on the /metrics of the member at clientURL (served beside gRPC on etcd's and
// clusterd's client URLs), which peers member local counts as live: etcd_network_active_peers
// above 0. The request goes with c's TLS settings (its client certificate too); /metrics needs no
// user. A page that is not member local's is an error: its view is unknown, never taken for
// "no peer is live".
func (c *Client) ActivePeers(ctx context.Context, clientURL string, local uint64) (map[uint64]bool, error) {
	addr, secure, err := parseEndpoint(clientURL, c.dialed[0].TLS)
	if err != nil {
		return nil, err
	}
	scheme, tr := "http", &http.Transport{}
	if secure {
		scheme = "https"
		if c.tls != nil {
			tr.TLSClientConfig = c.tls.Clone()
			tr.TLSClientConfig.NextProtos = nil
		}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// The text format: the protobuf one would need Prometheus's code.
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseActivePeers(io.LimitReader(resp.Body, maxMetricsBytes), local)
}

// parseActivePeers reads etcd_network_active_peers{Local="<local>",Remote="<id>"} from a page
// of Prometheus's text format. IDs are compared as numbers: etcd writes them without leading
// zeros, clusterd with. etcd makes a peer's series at its first connection, so a peer without
// one was not connected since the member started; the page counts only when it is the member's
// own, by its etcd_server_id{server_id="<local>"} (etcd 3.5 and later, clusterd).
func parseActivePeers(r io.Reader, local uint64) (map[uint64]bool, error) {
	peers := map[uint64]bool{}
	own := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || len(strings.Fields(value)) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			continue
		}
		switch name {
		case serverIDMetric:
			if id, ok := labelID(labels, "server_id"); ok && id == local && v > 0 {
				own = true
			}
		case activePeersMetric:
			l, lok := labelID(labels, "Local")
			remote, rok := labelID(labels, "Remote")
			if lok && rok && l == local {
				peers[remote] = peers[remote] || v > 0
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	if !own {
		return nil, fmt.Errorf("/metrics does not name member %s in %s", FormatID(local), serverIDMetric)
	}
	return peers, nil
}

// labelID is the hex ID in label name of a Prometheus label list (`a="x",b="y"`).
func labelID(labels, name string) (uint64, bool) {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k != name {
			continue
		}
		id, err := ParseID(strings.Trim(v, `"`))
		return id, err == nil
	}
	return 0, false
}
