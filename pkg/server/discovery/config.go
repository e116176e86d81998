package discovery

import (
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/clusterctl/clusterctl/pkg/registry"
)

// Config is etcd's v3 discovery settings, under etcd's flag names (the comments), plus how long
// to wait for the cluster to fill, which etcd does not bound.
type Config struct {
	Token     string   // --discovery-token
	Endpoints []string // --discovery-endpoints

	DialTimeout      time.Duration // --discovery-dial-timeout
	RequestTimeout   time.Duration // --discovery-request-timeout
	KeepAliveTime    time.Duration // --discovery-keepalive-time
	KeepAliveTimeout time.Duration // --discovery-keepalive-timeout

	CACert                string // --discovery-cacert
	Cert                  string // --discovery-cert
	Key                   string // --discovery-key
	InsecureTransport     bool   // --discovery-insecure-transport
	InsecureSkipTLSVerify bool   // --discovery-insecure-skip-tls-verify

	User     string // --discovery-user, "user" or "user:password"
	Password string // --discovery-password

	// WaitTimeout bounds the wait for the cluster to fill (--discovery-wait-timeout, clusterd's
	// own: etcd waits for ever).
	WaitTimeout time.Duration
	// ProgressInterval is how often the wait logs how many members have registered.
	ProgressInterval time.Duration
}

// DefaultProgressInterval is how often the wait logs its progress unless told otherwise.
const DefaultProgressInterval = 5 * time.Second

// DefaultConfig is Config with every default, etcd's (embed.DefaultDiscovery*) where etcd has
// the setting, and no token.
func DefaultConfig() Config {
	return Config{
		DialTimeout:       2 * time.Second,
		RequestTimeout:    5 * time.Second,
		KeepAliveTime:     2 * time.Second,
		KeepAliveTimeout:  6 * time.Second,
		InsecureTransport: true,
		WaitTimeout:       10 * time.Minute,
		ProgressInterval:  DefaultProgressInterval,
	}
}

// Enabled reports whether discovery was asked for: a token or endpoints.
func (c Config) Enabled() bool { return c.Token != "" || len(c.Endpoints) > 0 }

// ErrConflictBootstrapFlags is etcd's refusal of --initial-cluster with discovery, in its words.
var ErrConflictBootstrapFlags = errors.New(`multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery-endpoints" or "discovery-srv"`)

// Validate checks the settings without any I/O. initialClusterGiven is whether --initial-cluster
// was set (flag, environment or file) rather than left at its default: the two ways to name the
// first members exclude each other. Settings that are not enabled are not checked.
func (c Config) Validate(initialClusterGiven bool) error {
	if !c.Enabled() {
		return nil
	}
	if initialClusterGiven {
		return ErrConflictBootstrapFlags
	}
	// etcd's words for the next two.
	if (c.Token != "") != (len(c.Endpoints) > 0) {
		return errors.New("both --discovery-token and --discovery-endpoints must be set")
	}
	for _, ep := range c.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return errors.New("--discovery-endpoints must not contain empty endpoints")
		}
	}
	if err := registry.ValidateToken(c.Token); err != nil {
		return fmt.Errorf("--discovery-token: %w", err)
	}
	for flag, d := range map[string]time.Duration{
		"--discovery-dial-timeout": c.DialTimeout, "--discovery-request-timeout": c.RequestTimeout,
		"--discovery-wait-timeout": c.WaitTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive, not %v", flag, d)
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		return errors.New("--discovery-cert and --discovery-key must be given together")
	}
	if c.Password != "" && strings.Contains(c.User, ":") {
		return errors.New("--discovery-password is given, so --discovery-user must not include a password")
	}
	return nil
}

// credentials are the user and password, from --discovery-user alone when it is user:password,
// as etcd reads them.
func (c Config) credentials() (user, password string) {
	if u, p, ok := strings.Cut(c.User, ":"); ok {
		return u, p
	}
	return c.User, c.Password
}

// clientConfig is the etcd client's configuration, built as etcd builds it from the same
// settings (clientv3.NewClientConfig), so TLS and auth behave as with etcd's own flags.
func (c Config) clientConfig() (*clientv3.Config, error) {
	user, password := c.credentials()
	spec := &clientv3.ConfigSpec{
		Endpoints:        c.Endpoints,
		DialTimeout:      c.DialTimeout,
		RequestTimeout:   c.RequestTimeout,
		KeepAliveTime:    c.KeepAliveTime,
		KeepAliveTimeout: c.KeepAliveTimeout,
		Secure: &clientv3.SecureConfig{
			Cert: c.Cert, Key: c.Key, Cacert: c.CACert,
			InsecureTransport: c.InsecureTransport, InsecureSkipVerify: c.InsecureSkipTLSVerify,
		},
	}
	if user != "" {
		spec.Auth = &clientv3.AuthConfig{Username: user, Password: password}
	}
	// The client logs nothing: every outcome reaches the operator through this package's
	// errors and its own slog lines.
	cfg, err := clientv3.NewClientConfig(spec, zap.NewNop())
	if err != nil {
		return nil, fmt.Errorf("discovery TLS settings: %w", err)
	}
	cfg.Logger = zap.NewNop()
	return cfg, nil
}
