package registry

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// Prefix is where etcd's v3 discovery keeps every token. Stored on the discovery service and
// read by etcd: never change.
const Prefix = "/_etcd/registry"

// etcd's v3 discovery errors, in its words (etcd server/etcdserver/api/v3discovery).
var (
	ErrSizeNotFound = errors.New("discovery: size key not found")
	ErrBadSizeKey   = errors.New("discovery: size key is bad")
	ErrFullCluster  = errors.New("discovery: cluster is full")
	ErrInvalidURL   = errors.New("discovery: invalid peer URL")
)

// ValidateToken refuses a token that would not name one directory of the registry.
func ValidateToken(token string) error {
	switch {
	case token == "":
		return errors.New("discovery token is empty")
	case strings.ContainsAny(token, "/ \t\n") || token == "." || token == "..":
		return fmt.Errorf("discovery token %q: must not contain '/' or spaces, nor be . or ..", token)
	}
	return nil
}

// TokenPrefix is the prefix of every key of token, with its final slash, so that token "a"
// does not take in the keys of token "ab".
func TokenPrefix(token string) string { return path.Join(Prefix, token) + "/" }

// SizeKey holds the expected number of members.
func SizeKey(token string) string { return path.Join(Prefix, token, "_config/size") }

// MembersPrefix is the prefix of every registration of token. etcd reads "members" without
// the slash; the slash keeps out keys that are not registrations, which no member writes.
func MembersPrefix(token string) string { return path.Join(Prefix, token, "members") + "/" }

// MemberKey is the registration of the member with ID id: the ID in hex without leading
// zeros, as etcd's types.ID prints it.
func MemberKey(token string, id uint64) string {
	return MembersPrefix(token) + strconv.FormatUint(id, 16)
}

// BootstrappedKey marks that the member with ID id left discovery with the full cluster: its
// data directory holds the cluster from then on, and a start of the same member on an empty
// one is a member whose data was lost, not one still bootstrapping.
func BootstrappedKey(token string, id uint64) string {
	return path.Join(Prefix, token, "_clusterd/bootstrapped", strconv.FormatUint(id, 16))
}

// ParseSize reads the size key's value as etcd does.
func ParseSize(v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 0)
	if err != nil || n <= 0 {
		return 0, ErrBadSizeKey
	}
	return int(n), nil
}

// Value is a registration's value for a member: "name=url" for each peer URL, sorted, joined by
// "," (etcd's types.URLsMap.String).
func Value(name string, peerURLs []string) string {
	pairs := make([]string, len(peerURLs))
	for i, u := range peerURLs {
		pairs[i] = name + "=" + u
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// Registration is one key under MembersPrefix.
type Registration struct {
	Key string
	// ID is the key's last element read as hex; zero if it is not hex.
	ID             uint64
	Name           string
	PeerURLs       []string
	Value          string
	CreateRevision int64
}

// ParseRegistration reads one registration. A value that is not name=url[,name=url...] with
// one name is refused, as etcd refuses a value without "=".
func ParseRegistration(key, value string, createRevision int64) (Registration, error) {
	value = strings.TrimSpace(value)
	r := Registration{Key: key, Value: value, CreateRevision: createRevision}
	r.ID, _ = strconv.ParseUint(path.Base(key), 16, 64)
	for _, pair := range strings.Split(value, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" || u == "" {
			return r, fmt.Errorf("registration %s: %q is not name=peer-url", key, value)
		}
		if r.Name != "" && name != r.Name {
			return r, fmt.Errorf("registration %s: %q names two members", key, value)
		}
		if err := membership.ValidateURL(u); err != nil {
			return r, fmt.Errorf("registration %s: %w: %v", key, ErrInvalidURL, err)
		}
		r.Name = name
		r.PeerURLs = append(r.PeerURLs, u)
	}
	return r, nil
}

// State is where a registration stands in the cluster its token forms.
type State string

// Stored nowhere, but printed by clusterctl discovery status: never rename.
const (
	// InCluster: one of the first <size> registrations.
	InCluster State = "member"
	// BeyondSize: registered after the cluster was full.
	BeyondSize State = "beyond-size"
	// Conflict: takes a name or a peer URL of an earlier registration.
	Conflict State = "conflict"
)

// Placed is a registration and where it stands.
type Placed struct {
	Registration
	State State
	// With is the earlier registration a Conflict clashes with.
	With string
}

// Cluster is what a token's registrations form.
type Cluster struct {
	Size int
	// Members are the registrations in the cluster, by create revision, at most Size.
	Members []Registration
	// All is every registration, by create revision, with where it stands.
	All []Placed
}

// Full reports whether Size members are registered.
func (c *Cluster) Full() bool { return len(c.Members) >= c.Size }

// Place orders regs by create revision (then key, for equal revisions, which one etcd
// transaction could give) and takes the first size that do not clash with an earlier one.
func Place(size int, regs []Registration) *Cluster {
	regs = slices.Clone(regs)
	slices.SortFunc(regs, func(a, b Registration) int {
		return cmp.Or(cmp.Compare(a.CreateRevision, b.CreateRevision), strings.Compare(a.Key, b.Key))
	})
	c := &Cluster{Size: size}
	names := map[string]string{} // name -> key, of every earlier registration not passed over
	urls := map[string]string{}
	for _, r := range regs {
		p := Placed{Registration: r}
		if with, ok := names[r.Name]; ok {
			p.State, p.With = Conflict, with
		}
		for _, u := range r.PeerURLs {
			if with, ok := urls[u]; ok && p.State == "" {
				p.State, p.With = Conflict, with
			}
		}
		if p.State == "" {
			names[r.Name] = r.Key
			for _, u := range r.PeerURLs {
				urls[u] = r.Key
			}
			p.State = BeyondSize
			if len(c.Members) < size {
				p.State = InCluster
				c.Members = append(c.Members, r)
			}
		}
		c.All = append(c.All, p)
	}
	return c
}

// Find returns where the registration under key stands, if there is one.
func (c *Cluster) Find(key string) (Placed, bool) {
	for _, p := range c.All {
		if p.Key == key {
			return p, true
		}
	}
	return Placed{}, false
}

// InitialCluster is the members as --initial-cluster gives them: each registration's value,
// in the cluster's order, joined by ",".
func (c *Cluster) InitialCluster() string {
	vs := make([]string, len(c.Members))
	for i, m := range c.Members {
		vs[i] = m.Value
	}
	return strings.Join(vs, ",")
}

// Names are the names of the members, in the cluster's order.
func (c *Cluster) Names() []string {
	ns := make([]string, len(c.Members))
	for i, m := range c.Members {
		ns[i] = m.Name
	}
	return ns
}
