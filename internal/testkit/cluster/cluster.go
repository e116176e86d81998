package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/clusterctl/clusterctl/internal/testkit/freeport"
	"github.com/clusterctl/clusterctl/internal/testkit/proc"
	"github.com/clusterctl/clusterctl/internal/testkit/testpki"
)

// Config says what a Cluster starts and where.
type Config struct {
	// Server is the path of the server binary: clusterd, or etcd.
	Server string
	// Dir holds the members' data dirs and their stdout and stderr files.
	Dir string
	// Env is the environment of every member, before any variables given at start. It should
	// hold PATH and little else.
	Env []string
	// Token is the --initial-cluster-token of bootstrapped members.
	Token string
	// Logf, if set, records starts and stops in the test's log.
	Logf func(format string, args ...any)
	// Args are appended to the flags of every start, Bootstrap's and Start's alike (the bench's
	// --snapshot-count and --log-level).
	Args []string
	// Profile gives each member a metrics URL of its own (Member.MetricsURL) and starts it with
	// --listen-metrics-urls there and --enable-pprof, so its profiles can be fetched.
	Profile bool
	// TLS, when set, serves both ports of every member over TLS with client-certificate
	// authentication, as kubeadm sets etcd up: the CA issues each member a server certificate
	// and a peer certificate with its name as CN, and the probes present a client certificate
	// it issues (CN "harness"). Nil serves plain http.
	TLS *testpki.CA
	// Context, when done, ends every wait at once with its cause rather than at the wait's
	// timeout: an interrupted program does not wait for members it is about to stop. Nil never
	// ends a wait early.
	Context context.Context
}

// Member is one member's fixed addresses and its current process, if any.
type Member struct {
	Name       string
	ClientAddr string // 127.0.0.1:PORT, the form --endpoints takes
	PeerURL    string // http://127.0.0.1:PORT
	DataDir    string
	Stdout     string // file with the stdout of the latest start
	Stderr     string // file with the stderr of the latest start
	MetricsURL string // with Config.Profile: http://127.0.0.1:PORT, where /debug/pprof is served
	// With Config.TLS: the member's certificates, which a test may overwrite to rotate them.
	Server, Peer *testpki.Pair
	caFile       string
	creds        credentials.TransportCredentials // the probes', nil for plain

	args []string // of the latest start, for Restart
	env  []string
	proc *proc.Proc
}

// ClientURL returns the member's client URL.
func (m *Member) ClientURL() string {
	if m.Server != nil {
		return "https://" + m.ClientAddr
	}
	return "http://" + m.ClientAddr
}

// Running reports whether the member's process is running.
func (m *Member) Running() bool { return m.proc != nil && m.proc.Running() }

// Pid returns the process ID of the member's latest start, or 0 if it was never started.
func (m *Member) Pid() int {
	if m.proc == nil {
		return 0
	}
	return m.proc.Pid()
}

// Cluster is a set of members started from one server binary.
type Cluster struct {
	cfg     Config
	mu      sync.Mutex
	members map[string]*Member
	order   []string // names in allocation order, for stable output
}

// New returns an empty cluster. Close kills whatever it started.
func New(cfg Config) *Cluster {
	if cfg.Token == "" {
		cfg.Token = "clusterctl-test"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	return &Cluster{cfg: cfg, members: map[string]*Member{}}
}

// Config returns the cluster's configuration.
func (c *Cluster) Config() Config { return c.cfg }

// Alloc gives a member its ports and data dir, or returns the existing member of that name.
// Nothing is started and the data dir is not created: creating it is the server's job, and some
// tests check that a refused start leaves no data dir behind.
func (c *Cluster) Alloc(name string) (*Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.members[name]; ok {
		return m, nil
	}
	if name == "" || strings.ContainsAny(name, "=,/ \t\n") {
		return nil, fmt.Errorf("bad member name %q", name)
	}
	n := 2
	if c.cfg.Profile {
		n = 3
	}
	ports, err := freeport.Ports(n)
	if err != nil {
		return nil, err
	}
	m := &Member{
		Name:       name,
		ClientAddr: "127.0.0.1:" + strconv.Itoa(ports[0]),
		PeerURL:    "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		DataDir:    filepath.Join(c.cfg.Dir, "data", name),
		Stdout:     filepath.Join(c.cfg.Dir, name+".stdout"),
		Stderr:     filepath.Join(c.cfg.Dir, name+".stderr"),
	}
	if c.cfg.Profile {
		m.MetricsURL = "http://127.0.0.1:" + strconv.Itoa(ports[2])
	}
	if c.cfg.TLS != nil {
		if err := c.issue(m); err != nil {
			return nil, err
		}
	}
	c.members[name] = m
	c.order = append(c.order, name)
	return m, nil
}

// Member returns the member of that name.
func (c *Cluster) Member(name string) (*Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.members[name]
	if !ok {
		return nil, fmt.Errorf("no member %q (known: %s)", name, strings.Join(c.order, " "))
	}
	return m, nil
}

// Members returns every allocated member in allocation order.
func (c *Cluster) Members() []*Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]*Member, 0, len(c.order))
	for _, n := range c.order {
		ms = append(ms, c.members[n])
	}
	return ms
}

// Running returns the members whose process is running, in allocation order.
func (c *Cluster) Running() []*Member {
	var ms []*Member
	for _, m := range c.Members() {
		if m.Running() {
			ms = append(ms, m)
		}
	}
	return ms
}

// InitialCluster returns name=peerURL for the given members, joined by commas.
func InitialCluster(ms []*Member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + m.PeerURL
	}
	return strings.Join(parts, ",")
}

// Endpoints returns the client addresses of the given members, joined by commas.
func Endpoints(ms []*Member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.ClientAddr
	}
	return strings.Join(parts, ",")
}

// BootstrapNames returns the conventional names of the first n members: infra0, infra1, ...
func BootstrapNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "infra" + strconv.Itoa(i)
	}
	return names
}

// issue gives m its certificates and https:// URLs, and the probes their client certificate.
func (c *Cluster) issue(m *Member) error {
	ca := c.cfg.TLS
	var err error
	if m.Server, err = ca.Server(m.Name); err != nil {
		return err
	}
	if m.Peer, err = ca.Peer(m.Name); err != nil {
		return err
	}
	probe, err := ca.Client("harness")
	if err != nil {
		return err
	}
	cert, err := probe.TLS()
	if err != nil {
		return err
	}
	m.PeerURL = strings.Replace(m.PeerURL, "http://", "https://", 1)
	m.caFile = ca.CertFile
	m.creds = credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}})
	return nil
}

// ListenArgs are the flags a member needs that no printed environment carries: where to keep
// data, where to listen and, with Config.TLS, its certificates.
func (m *Member) ListenArgs() []string {
	return append([]string{
		"--data-dir=" + m.DataDir,
		"--listen-peer-urls=" + m.PeerURL,
		"--listen-client-urls=" + m.ClientURL(),
		"--advertise-client-urls=" + m.ClientURL(),
	}, m.TLSArgs()...)
}

// TLSArgs are the member's TLS flags with Config.TLS: its certificates on both ports and
// client-certificate authentication on both; none without.
func (m *Member) TLSArgs() []string {
	if m.Server == nil {
		return nil
	}
	return []string{
		"--cert-file=" + m.Server.CertFile, "--key-file=" + m.Server.KeyFile,
		"--trusted-ca-file=" + m.caFile, "--client-cert-auth",
		"--peer-cert-file=" + m.Peer.CertFile, "--peer-key-file=" + m.Peer.KeyFile,
		"--peer-trusted-ca-file=" + m.caFile, "--peer-client-cert-auth",
	}
}

// BaseArgs are ListenArgs plus the member's name and advertised peer URL.
func (m *Member) BaseArgs() []string {
	return append([]string{"--name=" + m.Name, "--initial-advertise-peer-urls=" + m.PeerURL}, m.ListenArgs()...)
}

// Bootstrap allocates members named infra0..infra<n-1> and starts them as a new cluster, each
// with extra appended to its flags. It does not wait: see WaitStarted and WaitLeader.
func (c *Cluster) Bootstrap(n int, extra []string) ([]*Member, error) {
	var ms []*Member
	for _, name := range BootstrapNames(n) {
		m, err := c.Alloc(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	ic := InitialCluster(ms)
	for _, m := range ms {
		args := append(m.BaseArgs(),
			"--initial-cluster="+ic,
			"--initial-cluster-state=new",
			"--initial-cluster-token="+c.cfg.Token)
		if err := c.Start(m.Name, append(args, extra...), nil); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// Start starts the named member's server with args followed by the cluster's Args (and the
// profiling flags with Config.Profile), and env added to the cluster's environment. The member
// must be allocated and not running.
func (c *Cluster) Start(name string, args, env []string) error {
	m, err := c.Member(name)
	if err != nil {
		return err
	}
	if m.Running() {
		return fmt.Errorf("member %s is already running (pid %d)", name, m.proc.Pid())
	}
	p, err := proc.Start(proc.Spec{
		Name:   name,
		Path:   c.cfg.Server,
		Args:   c.argv(m, args),
		Env:    append(append([]string{}, c.cfg.Env...), env...),
		Dir:    c.cfg.Dir,
		Stdout: m.Stdout,
		Stderr: m.Stderr,
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	m.args, m.env, m.proc = args, env, p
	c.mu.Unlock()
	c.cfg.Logf("started %s (pid %d): %s %s %s", name, p.Pid(), strings.Join(env, " "),
		filepath.Base(c.cfg.Server), strings.Join(args, " "))
	return nil
}

// argv is what a start of m with args runs the server with.
func (c *Cluster) argv(m *Member, args []string) []string {
	argv := append(append([]string{}, args...), c.cfg.Args...)
	if c.cfg.Profile {
		argv = append(argv, "--listen-metrics-urls="+m.MetricsURL, "--enable-pprof")
	}
	return argv
}

// Restart starts the member again with the flags and environment of its latest start.
func (c *Cluster) Restart(name string) error {
	m, err := c.started(name)
	if err != nil {
		return err
	}
	return c.Start(name, m.args, m.env)
}

func (c *Cluster) started(name string) (*Member, error) {
	m, err := c.Member(name)
	if err != nil {
		return nil, err
	}
	if m.proc == nil {
		return nil, fmt.Errorf("member %s was never started", name)
	}
	return m, nil
}

// Kill kills the member with SIGKILL and waits until it is reaped.
func (c *Cluster) Kill(name string) error {
	m, err := c.started(name)
	if err != nil {
		return err
	}
	e, err := m.proc.Kill(10 * time.Second)
	c.cfg.Logf("killed %s: %v", name, e)
	return err
}

// Stop sends SIGTERM and waits up to timeout for the member to exit; the exit status is then
// available from WaitExit.
func (c *Cluster) Stop(name string, timeout time.Duration) error {
	m, err := c.started(name)
	if err != nil {
		return err
	}
	e, err := m.proc.Stop(timeout)
	c.cfg.Logf("stopped %s: %v", name, e)
	return err
}

// Signal sends sig to the member's process.
func (c *Cluster) Signal(name string, sig syscall.Signal) error {
	m, err := c.started(name)
	if err != nil {
		return err
	}
	return m.proc.Signal(sig)
}

// WaitExit waits up to timeout for the member's latest process to exit and returns how it ended.
func (c *Cluster) WaitExit(name string, timeout time.Duration) (proc.Exit, error) {
	m, err := c.started(name)
	if err != nil {
		return proc.Exit{}, err
	}
	e, err := m.proc.Wait(timeout)
	if err != nil {
		return e, fmt.Errorf("%v; its stderr ends:\n%s", err, m.proc.StderrTail(20))
	}
	return e, nil
}

// StopAll sends SIGTERM to every running member at once, then waits up to timeout for each to
// exit and kills any that does not; signalling them together costs one timeout, not one each.
func (c *Cluster) StopAll(timeout time.Duration) error {
	ms := c.Running()
	for _, m := range ms {
		_ = m.proc.Signal(syscall.SIGTERM)
	}
	var errs []error
	for _, m := range ms {
		e, err := m.proc.Stop(timeout)
		c.cfg.Logf("stopped %s: %v", m.Name, e)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close kills every running member and waits for each to be reaped. Data dirs are left for
// inspection (testscript's -testwork keeps them).
func (c *Cluster) Close() {
	for _, m := range c.Members() {
		if m.Running() {
			_, _ = m.proc.Kill(10 * time.Second)
		}
	}
}

// Describe returns one line per member, for failure messages: whether it runs and how its
// latest process ended.
func (c *Cluster) Describe() string {
	var lines []string
	for _, m := range c.Members() {
		state := "never started"
		switch {
		case m.Running():
			state = fmt.Sprintf("running, pid %d", m.proc.Pid())
		case m.proc != nil:
			e, _ := m.proc.Wait(0)
			state = e.String()
		}
		lines = append(lines, fmt.Sprintf("%s client=%s peer=%s: %s", m.Name, m.ClientAddr, m.PeerURL, state))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// ReadJSONEnv reads the variables from the JSON lines that `member add -w json` or `member
// replace -w json` printed into a file: the "env" object of the first line that has one, its
// values as they are. Every line up to that one must be a JSON object.
func ReadJSONEnv(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for i, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			break
		}
		var v struct {
			Env map[string]string `json:"env"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", path, i+1, err)
		}
		if v.Env == nil {
			continue
		}
		var env []string
		for _, k := range slices.Sorted(maps.Keys(v.Env)) {
			env = append(env, k+"="+v.Env[k])
		}
		return env, nil
	}
	return nil, fmt.Errorf("%s: no line with an \"env\" object", path)
}

// ReadEnvFile reads the variables that `member add -w env` printed into a file.
func ReadEnvFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseEnv(string(b))
}

// ParseEnv parses lines KEY="VALUE" (or KEY=VALUE) the way a POSIX shell's `export` of that line
// and systemd's EnvironmentFile= both read them. Anything whose meaning would differ between
// those readers (an unquoted space, a $ or a backquote, a single quote) is an error, because the
// printed environment must work verbatim in every one of them.
func ParseEnv(text string) ([]string, error) {
	var env []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok || !validEnvKey(key) {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", i+1, line)
		}
		val, err := unquote(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: %v", i+1, line, err)
		}
		env = append(env, key+"="+val)
	}
	return env, nil
}

func validEnvKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func unquote(raw string) (string, error) {
	if strings.ContainsAny(raw, "$`'") {
		return "", fmt.Errorf("contains a character that shells and systemd read differently")
	}
	if !strings.HasPrefix(raw, `"`) {
		if strings.ContainsAny(raw, " \t\"\\") {
			return "", fmt.Errorf("unquoted value with a space, quote or backslash")
		}
		return raw, nil
	}
	if len(raw) < 2 || !strings.HasSuffix(raw, `"`) {
		return "", fmt.Errorf("unterminated double quote")
	}
	inner := raw[1 : len(raw)-1]
	if strings.ContainsAny(inner, "\"\\") {
		return "", fmt.Errorf("quote or backslash inside the value")
	}
	return inner, nil
}
