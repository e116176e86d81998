package server

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server/authz"
	"github.com/clusterctl/clusterctl/pkg/server/discovery"
	"github.com/clusterctl/clusterctl/pkg/server/servertls"
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
	// MaxHistory is --max-history: how many membership changes the history keeps, the newest;
	// zero keeps every one.
	MaxHistory int
	// ForceNewCluster restarts an existing data directory as a one-member cluster: see
	// raftnode.ForceNewCluster.
	ForceNewCluster bool
	// ForceNewClusterBypassLiveCheck forces a new cluster even when a quorum of the other
	// members answers that it is running with a leader. Dangerous: it removes a healthy
	// cluster's members for good.
	ForceNewClusterBypassLiveCheck bool
	// ListenMetricsURLs serve /health and /metrics, and Go's profiles when EnablePprof is set;
	// none by default.
	ListenMetricsURLs []string
	EnablePprof       bool
	// TLS is etcd's TLS settings of both ports (--cert-file, --peer-cert-file, ...); New fills
	// in their listen URLs and data directory from the fields above.
	TLS servertls.Settings
	// AdminAllowedCNs is --admin-cert-allowed-cn: the client certificate CNs allowed the admin
	// operations (membership changes, snapshot, leadership transfer); empty allows every caller.
	AdminAllowedCNs []string
	// Discovery is etcd's v3 discovery (--discovery-token, --discovery-endpoints, ...): consulted
	// only to bootstrap a new cluster on an empty data directory, never once a member exists.
	Discovery discovery.Config
	Logger    *slog.Logger
	// OnReady, if set, is called once the member has joined the cluster and applied its
	// membership, as systemd is told READY=1.
	OnReady func()
}

// ErrRemoved is returned by Run when this member has been removed from the cluster.
var ErrRemoved = errors.New("this member has been permanently removed from the cluster. Exiting.")

// validate checks the flags that do not depend on the data directory.
func (c *Config) validate() ([]datadir.Initial, error) {
	if c.Name == "" {
		return nil, errors.New("--name must not be empty")
	}
	// The one rule for names, as member add and --initial-cluster apply it: a name that
	// --initial-cluster would read differently (white space around it) is refused, not trimmed.
	if err := membership.ValidateName(c.Name); err != nil {
		return nil, fmt.Errorf("--name: %v", err)
	}
	if c.DataDir == "" {
		return nil, errors.New("--data-dir must not be empty")
	}
	if c.InitialClusterState != "new" && c.InitialClusterState != "existing" {
		return nil, fmt.Errorf("--initial-cluster-state %q: must be new or existing", c.InitialClusterState)
	}
	if c.HeartbeatInterval <= 0 {
		return nil, fmt.Errorf("--heartbeat-interval %d: must be at least 1 (milliseconds)", c.HeartbeatInterval.Milliseconds())
	}
	if c.ElectionTimeout < 5*c.HeartbeatInterval {
		return nil, fmt.Errorf("--election-timeout %v must be at least 5 times --heartbeat-interval %v", c.ElectionTimeout, c.HeartbeatInterval)
	}
	if c.MaxLearners < 0 {
		return nil, fmt.Errorf("--max-learners %d: must not be negative", c.MaxLearners)
	}
	if c.EnablePprof && len(c.ListenMetricsURLs) == 0 {
		return nil, errors.New("--enable-pprof needs --listen-metrics-urls: the client URLs speak gRPC only")
	}
	if len(c.ListenMetricsURLs) > 0 {
		if err := checkURLs("--listen-metrics-urls", c.ListenMetricsURLs, false); err != nil {
			return nil, err
		}
	}
	for flag, urls := range map[string][]string{
		"--listen-client-urls": c.ListenClientURLs, "--advertise-client-urls": c.AdvertiseClientURLs,
		"--listen-peer-urls": c.ListenPeerURLs, "--initial-advertise-peer-urls": c.InitialAdvertisePeerURLs,
	} {
		if err := checkURLs(flag, urls, true); err != nil {
			return nil, err
		}
	}
	if err := c.validateTLS(); err != nil {
		return nil, err
	}
	if err := c.Discovery.Validate(c.InitialClusterGiven); err != nil {
		return nil, err
	}
	initial, err := datadir.ParseInitialCluster(c.InitialCluster)
	if err != nil {
		return nil, err
	}
	return initial, nil
}

// validateTLS checks the TLS settings against the listen URLs, and the admin CN list against
// them: an https:// listener without a certificate, or a security setting that would do
// nothing, stops clusterd before anything is written.
func (c *Config) validateTLS() error {
	c.TLS.Client.ListenURLs = c.ListenClientURLs
	c.TLS.Peer.ListenURLs = c.ListenPeerURLs
	c.TLS.DataDir = c.DataDir
	c.TLS.Logger = c.Logger
	if err := c.TLS.Validate(); err != nil {
		return err
	}
	// etcd's meaning: a client CA alone already demands a client certificate.
	verifies := c.TLS.Client.ClientCertAuth || c.TLS.Client.TrustedCAFile != ""
	return authz.CheckSetting(c.AdminAllowedCNs, verifies)
}

// checkURLs refuses malformed and repeated URLs, and https:// and unixs:// ones unless tls.
func checkURLs(flag string, urls []string, tls bool) error {
	if len(urls) == 0 {
		return fmt.Errorf("%s must name at least one URL", flag)
	}
	if len(urls) > membership.MaxURLs {
		return fmt.Errorf("%s: %d URLs, more than a member may have (%d)", flag, len(urls), membership.MaxURLs)
	}
	seen := map[string]string{}
	for _, u := range urls {
		if err := membership.ValidateURL(u); err != nil {
			return fmt.Errorf("%s %q: %v", flag, u, err)
		}
		if !tls && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "unix://") {
			return fmt.Errorf("%s %q: served over plain http only", flag, u)
		}
		// Compared as addresses: localhost:2379 and 127.0.0.1:2379 are one listener.
		k := membership.AddressKey(u)
		if first, ok := seen[k]; ok {
			if first == u {
				return fmt.Errorf("%s %q: URL given twice", flag, u)
			}
			return fmt.Errorf("%s %q: the same address as %q", flag, u, first)
		}
		seen[k] = u
	}
	return nil
}
