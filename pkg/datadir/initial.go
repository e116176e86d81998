package datadir

import (
	"fmt"
	"slices"
	"sort"
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
// etcd reads it; a URL given to two names is refused.
func ParseInitialCluster(s string) ([]Initial, error) {
	var out []Initial
	index := map[string]int{}
	usedBy := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || u == "" {
			return nil, fmt.Errorf("--initial-cluster %q: each entry must be name=peer-url", s)
		}
		if err := membership.ValidateURL(u); err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: %v", s, err)
		}
		if other, ok := usedBy[u]; ok {
			return nil, fmt.Errorf("--initial-cluster %q: peer URL %s is given to both %q and %q", s, u, other, name)
		}
		usedBy[u] = name
		if i, ok := index[name]; ok {
			out[i].URLs = append(out[i].URLs, u)
			continue
		}
		index[name] = len(out)
		out = append(out, Initial{Name: name, URLs: []string{u}})
	}
	return out, nil
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

// SameURLs reports whether two URL lists hold the same URLs in any order.
func SameURLs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}
