package membership

import (
	"fmt"
	"slices"
)

// Kind is what a Change does.
//
// Stored in raft entries: never renumber.
type Kind int

const (
	KindAdd     Kind = 1 // a new voter or learner
	KindRemove  Kind = 2
	KindUpdate  Kind = 3 // new peer URLs
	KindPromote Kind = 4 // learner to voter
	KindPublish Kind = 5 // a member's own process announces its name and client URLs
)

var kindNames = map[Kind]string{
	KindAdd: "add", KindRemove: "remove", KindUpdate: "update", KindPromote: "promote", KindPublish: "publish",
}

func (k Kind) String() string {
	if name, ok := kindNames[k]; ok {
		return name
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Change is one membership change, as it travels in a raft entry. Stored in the raft log:
// never rename a JSON tag.
type Change struct {
	Kind Kind `json:"kind"`
	// Member carries the target's ID and, depending on Kind, the fields that change:
	// add: everything; update: PeerURLs; publish: Name and ClientURLs.
	Member Member `json:"member"`
	// By is who asked for the change, recorded in the history; Validate and Apply never read it.
	By Origin `json:"by,omitzero"`
}

// Validate reports why ch cannot be proposed on c, or nil: this version's rules for input
// (names, URLs in canonical form, addresses no member uses yet), then Applicable's. A change
// that passed Validate but raced with another is refused identically everywhere by Applicable
// when it is applied.
func (c *Cluster) Validate(ch Change) error {
	if err := c.checkInput(ch); err != nil {
		return err
	}
	return c.Applicable(ch)
}

// checkInput holds the rules for what a change may ask for. They may tighten from one version to
// the next, so they run before proposing only, never at apply time.
func (c *Cluster) checkInput(ch Change) error {
	switch ch.Kind {
	case KindAdd, KindUpdate:
		if err := ValidatePeerURLs(ch.Member.PeerURLs); err != nil {
			return err
		}
		// etcd's own clients add members without a name (its API has none): the member names
		// itself when it publishes.
		if ch.Kind == KindAdd && ch.Member.Name != "" {
			if err := ValidateName(ch.Member.Name); err != nil {
				return fmt.Errorf("%w: %v", ErrInvalidName, err)
			}
		}
		return c.checkURLsFree(ch.Member.ID, ch.Member.PeerURLs)
	case KindPublish:
		return ValidateClientURLs(ch.Member.ClientURLs)
	}
	return nil
}

// Applicable reports why ch cannot be applied to c, or nil. It is the check at apply time, and
// it must accept every entry an older version accepted: a member that joins replays entries
// committed under older rules, and one that refused what its peers applied would hold another
// membership than theirs. So it holds only the invariants every version keeps: IDs, removed IDs,
// one name and one exact peer URL per member, and a voter left.
func (c *Cluster) Applicable(ch Change) error {
	id := ch.Member.ID
	if id == 0 {
		return ErrIDNotFound
	}
	existing, exists := c.Members[id]
	switch ch.Kind {
	case KindAdd:
		if exists {
			return ErrIDExists
		}
		if c.IsRemoved(id) {
			return ErrIDRemoved
		}
		if len(ch.Member.PeerURLs) == 0 {
			return ErrInvalidPeerURLs
		}
		if ch.Member.Name != "" && c.nameTaken(id, ch.Member.Name) {
			// A name is how operators and ETCD_INITIAL_CLUSTER tell members apart.
			return ErrNameExists
		}
		return c.samePeerURL(id, ch.Member.PeerURLs)
	case KindRemove:
		if !exists {
			return ErrIDNotFound
		}
		if !existing.IsLearner && len(c.Voters()) == 1 {
			// raft cannot run without a voter; etcd refuses this with the same words.
			return ErrNotEnoughStarted
		}
		return nil
	case KindUpdate:
		if !exists {
			return ErrIDNotFound
		}
		if len(ch.Member.PeerURLs) == 0 {
			return ErrInvalidPeerURLs
		}
		return c.samePeerURL(id, ch.Member.PeerURLs)
	case KindPromote:
		if !exists {
			return ErrIDNotFound
		}
		if !existing.IsLearner {
			return ErrPromoteVoter
		}
		return nil
	case KindPublish:
		if !exists {
			return ErrIDNotFound
		}
		return nil
	}
	return fmt.Errorf("unknown membership change %v", ch.Kind)
}

func (c *Cluster) nameTaken(self ID, name string) bool {
	for _, m := range c.Members {
		if m.ID != self && m.Name == name {
			return true
		}
	}
	return false
}

// samePeerURL refuses a peer URL that another member has, written exactly so: the one URL rule
// every version applies (checkURLsFree compares canonical addresses, before proposing). Linear
// in the URLs: it runs at apply time on every member.
func (c *Cluster) samePeerURL(self ID, urls []string) error {
	want := make(map[string]bool, len(urls))
	for _, u := range urls {
		want[u] = true
	}
	for _, m := range c.Members {
		if m.ID == self {
			continue
		}
		for _, u := range m.PeerURLs {
			if want[u] {
				return ErrPeerURLExists
			}
		}
	}
	return nil
}

// checkURLsFree refuses peer URLs whose address (AddressKey: canonical, loopback folded) is
// already another member's peer URL, or any member's client URL (its own included: one port
// cannot serve both). The error says which member uses it and as what, for the server's log; on
// the wire only the registered message travels. Each URL's key is computed once, into a map:
// the check is linear in the URLs of the change and of the cluster.
func (c *Cluster) checkURLsFree(self ID, urls []string) error {
	type use struct {
		m   *Member
		url string
	}
	peers, clients := map[string]use{}, map[string]use{}
	for _, m := range c.List() {
		if m.ID != self {
			for _, u := range m.PeerURLs {
				if k := AddressKey(u); peers[k].m == nil {
					peers[k] = use{m, u}
				}
			}
		}
		for _, u := range m.ClientURLs {
			if k := AddressKey(u); clients[k].m == nil {
				clients[k] = use{m, u}
			}
		}
	}
	for _, u := range urls {
		k := AddressKey(u)
		if used, ok := peers[k]; ok {
			return fmt.Errorf("%w: %s is the peer URL %s of member %s (%q)", ErrPeerURLExists, u, used.url, used.m.ID, used.m.Name)
		}
		if used, ok := clients[k]; ok {
			return fmt.Errorf("%w: %s is the client URL %s of member %s (%q)", ErrURLIsClientURL, u, used.url, used.m.ID, used.m.Name)
		}
	}
	return nil
}

// Apply returns the cluster after ch, or the unchanged cluster and Applicable's error.
func (c *Cluster) Apply(ch Change) (*Cluster, error) {
	if err := c.Applicable(ch); err != nil {
		return c, err
	}
	n := c.copyMembers()
	m := ch.Member
	switch ch.Kind {
	case KindAdd:
		added := m.clone()
		added.ClientURLs, added.Started = nil, false
		n.Members[m.ID] = added
	case KindRemove:
		delete(n.Members, m.ID)
		n.Removed = c.Removed.With(m.ID)
	case KindUpdate:
		// Only the peer URLs change: the learner flag and everything else stay as they were.
		n.Members[m.ID].PeerURLs = slices.Clone(m.PeerURLs)
	case KindPromote:
		n.Members[m.ID].IsLearner = false
	case KindPublish:
		p := n.Members[m.ID]
		if m.Name != "" {
			p.Name = m.Name
		}
		p.ClientURLs = slices.Clone(m.ClientURLs)
		p.Started = true
	}
	return n, nil
}
