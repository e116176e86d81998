package server

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/server/membership"
)

// Config is everything clusterd's flags say, with etcd's names.
type Config struct {
	Name                     string
	DataDir                  string
	ListenClientURLs         []string
	AdvertiseClientURLs      []string
	ListenPeerURLs           []string
	InitialAdvertisePeerURLs []string
	InitialCluster           string
	InitialClusterState      string
	InitialClusterToken      string
	HeartbeatInterval        time.Duration
	ElectionTimeout          time.Duration
	SnapshotCount            uint64
	StrictReconfigCheck      bool
	MaxLearners              int
	// ForceNewCluster restarts an existing data directory as a one-member cluster: see
	// forceNewCluster.
	ForceNewCluster bool
	Logger          *slog.Logger
}

// ErrRemoved is returned by Run when this member has been removed from the cluster.
var ErrRemoved = errors.New("this member has been permanently removed from the cluster. Exiting.")

// initialMember is one entry of --initial-cluster.
type initialMember struct {
	name string
	urls []string
}

// validate checks the flags that do not depend on the data directory.
func (c *Config) validate() ([]initialMember, error) {
	if c.Name == "" {
		return nil, errors.New("--name must not be empty")
	}
	if c.DataDir == "" {
		return nil, errors.New("--data-dir must not be empty")
	}
	if c.InitialClusterState != "new" && c.InitialClusterState != "existing" {
		return nil, fmt.Errorf("--initial-cluster-state %q: must be new or existing", c.InitialClusterState)
	}
	if c.HeartbeatInterval <= 0 || c.ElectionTimeout < 5*c.HeartbeatInterval {
		return nil, fmt.Errorf("--election-timeout %v must be at least 5 times --heartbeat-interval %v", c.ElectionTimeout, c.HeartbeatInterval)
	}
	if c.MaxLearners < 0 {
		return nil, fmt.Errorf("--max-learners %d: must not be negative", c.MaxLearners)
	}
	for flag, urls := range map[string][]string{
		"--listen-client-urls": c.ListenClientURLs, "--advertise-client-urls": c.AdvertiseClientURLs,
		"--listen-peer-urls": c.ListenPeerURLs, "--initial-advertise-peer-urls": c.InitialAdvertisePeerURLs,
	} {
		if err := checkURLs(flag, urls); err != nil {
			return nil, err
		}
	}
	initial, err := parseInitialCluster(c.InitialCluster)
	if err != nil {
		return nil, err
	}
	return initial, nil
}

func checkURLs(flag string, urls []string) error {
	if len(urls) == 0 {
		return fmt.Errorf("%s must name at least one URL", flag)
	}
	seen := map[string]bool{}
	for _, u := range urls {
		if err := membership.ValidateURL(u); err != nil {
			return fmt.Errorf("%s %q: %v", flag, u, err)
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "unix://") {
			return fmt.Errorf("%s %q: clusterd serves plain http and unix sockets only", flag, u)
		}
		if seen[u] {
			return fmt.Errorf("%s %q: URL given twice", flag, u)
		}
		seen[u] = true
	}
	return nil
}

func parseInitialCluster(s string) ([]initialMember, error) {
	var out []initialMember
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
		// etcd's format lists a member once per peer URL: name=a,name=b.
		if i, ok := index[name]; ok {
			out[i].urls = append(out[i].urls, u)
			continue
		}
		index[name] = len(out)
		out = append(out, initialMember{name: name, urls: []string{u}})
	}
	return out, nil
}

// local finds this member's entry, checking it against --initial-advertise-peer-urls.
func (c *Config) local(initial []initialMember) (initialMember, error) {
	for _, m := range initial {
		if m.name == c.Name {
			if !sameURLs(m.urls, c.InitialAdvertisePeerURLs) {
				return m, fmt.Errorf("--initial-cluster has %s=%s but --initial-advertise-peer-urls is %s",
					m.name, strings.Join(m.urls, ","), strings.Join(c.InitialAdvertisePeerURLs, ","))
			}
			return m, nil
		}
	}
	return initialMember{}, fmt.Errorf("couldn't find local name %q in the initial cluster configuration", c.Name)
}

func sameURLs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// memberID derives a bootstrap member's ID from its peer URLs and the cluster token, so that
// every member of a new cluster computes the same IDs.
func memberID(urls []string, token string) membership.ID {
	u := slices.Clone(urls)
	sort.Strings(u)
	return hashID(strings.Join(u, ",") + "|" + token)
}

// clusterID derives the cluster ID from its first members' IDs and the token.
func clusterID(ids []membership.ID, token string) membership.ID {
	s := slices.Clone(ids)
	slices.Sort(s)
	var b strings.Builder
	for _, id := range s {
		b.WriteString(id.String())
	}
	return hashID(b.String() + "|" + token)
}

func hashID(s string) membership.ID {
	sum := sha256.Sum256([]byte(s))
	if id := membership.ID(binary.BigEndian.Uint64(sum[:8])); id != 0 {
		return id
	}
	return 1
}
