package datadir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
)

// DefaultClusterToken is clusterd's default --initial-cluster-token, and snapshot restore's, so
// that a member restored and then started with the same flags derives the same IDs.
const DefaultClusterToken = "clusterd-cluster"

// Initial is one member of --initial-cluster.
type Initial struct {
	Name string
	URLs []string
}

// ParseInitialCluster reads name=url,name=url. A name given twice has several peer URLs, as
// etcd reads it. Each name must be empty (a member not started yet) or pass
// membership.ValidateName, and each URL membership.ValidateURL;
// an address given twice (in any spelling membership treats as one address) is refused, saying
// whether it was given twice to one member or to two.
func ParseInitialCluster(s string) ([]Initial, error) {
	var out []Initial
	usedBy := map[string]Initial{} // by address key: the first member and URL that gave it
	for _, part := range strings.Split(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || u == "" {
			return nil, fmt.Errorf("--initial-cluster %q: each entry must be name=peer-url", s)
		}
		// An empty name is a member that has not started yet: etcd's API names a member only once
		// it has published itself, so the environment etcdctl prints for a join lists the others
		// that way ("=https://..."), and the join matches them by their URLs.
		if name != "" {
			if err := membership.ValidateName(name); err != nil {
				return nil, fmt.Errorf("--initial-cluster %q: %v", s, err)
			}
		}
		if err := membership.ValidateURL(u); err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: %v", s, err)
		}
		if err := checkAddressFree(usedBy, name, u); err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: %v", s, err)
		}
		if i := slices.IndexFunc(out, func(m Initial) bool { return m.Name == name }); i >= 0 {
			out[i].URLs = append(out[i].URLs, u)
			continue
		}
		out = append(out, Initial{Name: name, URLs: []string{u}})
	}
	return out, nil
}

// checkAddressFree records that member name gives URL u, refusing one host and port twice to one
// member (in any case or scheme) and one address to two members. One member may
// give two names of one address (localhost and 127.0.0.1), as membership.ValidatePeerURLs allows.
func checkAddressFree(usedBy map[string]Initial, name, u string) error {
	k := membership.AddressKey(u)
	first, ok := usedBy[k]
	switch {
	case !ok:
		usedBy[k] = Initial{Name: name, URLs: []string{u}}
		return nil
	case first.Name == name:
		if slices.Contains(first.URLs, u) {
			return fmt.Errorf("peer URL %s is given twice to %q", u, name)
		}
		if err := membership.ValidatePeerURLs(append(slices.Clone(first.URLs), u)); err != nil {
			return fmt.Errorf("peer URLs %s and %s of %q are the same address", first.URLs[0], u, name)
		}
		first.URLs = append(first.URLs, u)
		usedBy[k] = first
		return nil
	case first.URLs[0] == u:
		return fmt.Errorf("peer URL %s is given to both %q and %q", u, first.Name, name)
	}
	return fmt.Errorf("peer URLs %s of %q and %s of %q are the same address", first.URLs[0], first.Name, u, name)
}

// Local returns member name's entry of --initial-cluster, which must hold exactly the URLs the
// member advertises (--initial-advertise-peer-urls, in any order): every member derives the
// member's ID from its URLs in --initial-cluster, so a member advertising others would not be the
// member the rest expect. clusterd checks this before a bootstrap or a join, and snapshot
// restore before it writes anything.
func Local(initial []Initial, name string, advertised []string) (Initial, error) {
	for _, m := range initial {
		if m.Name != name {
			continue
		}
		if !SameURLs(m.URLs, advertised) {
			return m, &PeerURLsMismatchError{Name: name, Initial: m.URLs, Advertised: advertised}
		}
		return m, nil
	}
	return Initial{}, &NameNotInClusterError{Name: name}
}

// SameURLs reports whether two URL lists hold the same URLs in any order, each compared in its
// canonical form (membership.CanonicalURL), so "HTTP://A:1" is "http://a:1"; a URL that is not
// valid is compared as written.
func SameURLs(a, b []string) bool {
	canon := func(urls []string) []string {
		out := make([]string, len(urls))
		for i, u := range urls {
			out[i] = u
			if c, err := membership.CanonicalURL(u); err == nil {
				out[i] = c
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(canon(a), canon(b))
}
