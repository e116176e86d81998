package server

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
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
	// InitialClusterGiven is whether --initial-cluster was set (flag, environment or file)
	// rather than left at its default: a restart compares only a given one with its data.
	InitialClusterGiven bool
	InitialClusterState string
	InitialClusterToken string
	HeartbeatInterval   time.Duration
	ElectionTimeout     time.Duration
	SnapshotCount       uint64
	StrictReconfigCheck bool
	MaxLearners         int
	// ForceNewCluster restarts an existing data directory as a one-member cluster: see
	// raftnode.ForceNewCluster.
	ForceNewCluster bool
	// ListenMetricsURLs serve /health, and Go's profiles when EnablePprof is set; none by default.
	ListenMetricsURLs []string
	EnablePprof       bool
	Logger            *slog.Logger
}

// ErrRemoved is returned by Run when this member has been removed from the cluster.
var ErrRemoved = errors.New("this member has been permanently removed from the cluster. Exiting.")

// validate checks the flags that do not depend on the data directory.
func (c *Config) validate() ([]datadir.Initial, error) {
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
	if c.EnablePprof && len(c.ListenMetricsURLs) == 0 {
		return nil, errors.New("--enable-pprof needs --listen-metrics-urls: the client URLs speak gRPC only")
	}
	if len(c.ListenMetricsURLs) > 0 {
		if err := checkURLs("--listen-metrics-urls", c.ListenMetricsURLs); err != nil {
			return nil, err
		}
	}
	for flag, urls := range map[string][]string{
		"--listen-client-urls": c.ListenClientURLs, "--advertise-client-urls": c.AdvertiseClientURLs,
		"--listen-peer-urls": c.ListenPeerURLs, "--initial-advertise-peer-urls": c.InitialAdvertisePeerURLs,
	} {
		if err := checkURLs(flag, urls); err != nil {
			return nil, err
		}
	}
	initial, err := datadir.ParseInitialCluster(c.InitialCluster)
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

// local finds this member's entry, checking it against --initial-advertise-peer-urls.
func (c *Config) local(initial []datadir.Initial) (datadir.Initial, error) {
	return datadir.Local(initial, c.Name, c.InitialAdvertisePeerURLs)
}
