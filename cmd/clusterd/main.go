// Command clusterd is a thin raft server whose only state is the cluster's membership. It
// speaks etcd's v3 Cluster API to clients and takes etcd's flags, so that the environment
// `clusterctl member add` prints starts a new member verbatim.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/clusterctl/clusterctl/pkg/datadir"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/server"
	"github.com/clusterctl/clusterctl/pkg/server/authz"
	"github.com/clusterctl/clusterctl/pkg/server/logfmt"
	"github.com/clusterctl/clusterctl/pkg/server/servertls"
)

// Exit statuses: docs/exit-codes.md. Never renumber.
const (
	exitOK      = 0
	exitFailed  = 1
	exitRemoved = 3
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	if versionAsked(args) {
		printVersion(os.Stdout)
		return exitOK
	}
	cfg, err := parse(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "clusterd: %v\n", err)
		return exitFailed
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "clusterd: %v\n", err)
		return exitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch err := srv.Run(ctx); {
	case err == nil && ctx.Err() != nil:
		// Stopped by a signal: the log says so, or the member just goes silent.
		cfg.Logger.Info("stopped", "reason", context.Cause(ctx).Error())
		return exitOK
	case err == nil:
		return exitOK
	case errors.Is(err, server.ErrRemoved):
		fmt.Fprintf(stderr, "clusterd: %v\n", err)
		return exitRemoved
	default:
		fmt.Fprintf(stderr, "clusterd: %v\n", err)
		return exitFailed
	}
}

// parse reads flags, then ETCD_* environment variables, then the config file, in that order
// of precedence, and turns them into the server's Config.
func parse(args []string, stderr io.Writer) (server.Config, error) {
	fs := defineFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return server.Config{}, err
	}
	if fs.NArg() > 0 {
		return server.Config{}, fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	v, err := readSources(fs)
	if err != nil {
		return server.Config{}, err
	}
	return buildConfig(fs, v, stderr)
}

// defineFlags declares etcd's flags that clusterd takes, with their defaults: the environment
// that `clusterctl member add` prints must start a member as it would start etcd.
func defineFlags(stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("clusterd", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String("name", "default", "human-readable name for this member")
	fs.String("data-dir", "", "path to the data directory (default ${name}.clusterd)")
	fs.String("listen-client-urls", "http://127.0.0.1:2379", "URLs to serve clients on")
	fs.String("advertise-client-urls", "http://127.0.0.1:2379", "client URLs to publish to the cluster")
	fs.String("listen-peer-urls", "http://127.0.0.1:2380", "URLs to serve peers on")
	fs.String("initial-advertise-peer-urls", "http://127.0.0.1:2380", "this member's peer URLs, as the cluster knows them")
	fs.String("initial-cluster", "default=http://127.0.0.1:2380", "every member at bootstrap: name=peer-url,...")
	fs.String("initial-cluster-state", "new", "new to bootstrap a cluster, existing to join one")
	fs.String("initial-cluster-token", datadir.DefaultClusterToken, "distinguishes clusters bootstrapped with the same --initial-cluster")
	fs.Uint("heartbeat-interval", 100, "time (ms) between heartbeats")
	fs.Uint("election-timeout", 1000, "time (ms) without a heartbeat before an election")
	fs.Uint64("snapshot-count", 10000, "applied entries between two snapshots")
	fs.Bool("strict-reconfig-check", true, "refuse membership changes that could break quorum")
	fs.Int("max-learners", 1, "how many learners the cluster may have")
	fs.Uint64("max-history", membership.DefaultMaxHistory, "membership changes kept in the history, the newest; 0 is taken as 1")
	fs.Bool("force-new-cluster", false, "restart this member's data as a one-member cluster, removing every other member (recovery from a lost majority)")
	fs.Bool("force-new-cluster-bypass-live-check", false, "DANGEROUS: with --force-new-cluster, do not first ask the other members whether a quorum of them still runs with a leader, and force a new cluster even then, removing them")
	fs.String("listen-metrics-urls", "", "URLs to serve /health and /metrics on, and /debug/pprof/ with --enable-pprof (none by default)")
	fs.Bool("enable-pprof", false, "serve Go's runtime profiles under /debug/pprof/ on --listen-metrics-urls")
	defineTLSFlags(fs)
	defineDiscoveryFlags(fs)
	fs.String("log-level", "info", "debug, info, warn or error")
	fs.String("log-format", "text", "text, or json with etcd's field names (level, ts, caller, msg)")
	fs.String("config-file", "", "YAML file with the same keys as the flags")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: clusterd [flags]\n\nEvery flag can also be set as ETCD_<FLAG> (upper case, - as _) or in --config-file.\n\n%s", fs.FlagUsages())
	}
	return fs
}

// defineTLSFlags declares etcd's TLS flags, with etcd's meaning, and clusterd's own
// --admin-cert-allowed-cn.
func defineTLSFlags(fs *pflag.FlagSet) {
	fs.String("cert-file", "", "client port: path to the server TLS certificate (https:// in --listen-client-urls)")
	fs.String("key-file", "", "client port: path to the server TLS key")
	fs.String("trusted-ca-file", "", "client port: CA that signs client certificates; given, every client must present one")
	fs.Bool("client-cert-auth", false, "client port: require a client certificate signed by --trusted-ca-file")
	fs.Bool("auto-tls", false, "client port: serve TLS with a self-signed certificate when --cert-file is not given")
	fs.String("peer-cert-file", "", "peer port: path to this member's certificate, served and presented to peers")
	fs.String("peer-key-file", "", "peer port: path to this member's key")
	fs.String("peer-trusted-ca-file", "", "peer port: CA that signs the peers' certificates")
	fs.Bool("peer-client-cert-auth", false, "peer port: require a peer certificate signed by --peer-trusted-ca-file")
	fs.String("peer-cert-allowed-cn", "", "peer port: comma-separated CNs a peer certificate must have")
	fs.String("peer-cert-allowed-hostname", "", "peer port: comma-separated host names a peer certificate must be valid for")
	fs.Bool(servertls.ClientOnlyFlag[2:], false, "clusterd's own, not etcd's: accept on the peer port a certificate for client use only (no serverAuth extended key usage)")
	fs.Bool("peer-auto-tls", false, "peer port: serve TLS with a self-signed certificate when --peer-cert-file is not given")
	fs.Uint("self-signed-cert-validity", 1, "validity in years of the --auto-tls and --peer-auto-tls certificates")
	fs.String("tls-min-version", "", "minimum TLS version: TLS1.2 (the default) or TLS1.3")
	fs.String("tls-max-version", "", "maximum TLS version: TLS1.2 or TLS1.3 (default: Go's highest)")
	fs.String("cipher-suites", "", "comma-separated TLS 1.2 cipher suites, Go's names (default: Go's)")
	fs.String(authz.Flag[2:], "", "clusterd's own, not etcd's: comma-separated client certificate CNs allowed membership changes, snapshot and move-leader (default: every client the client CA signed)")
}

// checkEnvironment refuses the ETCD_* variables that name no clusterd setting, every one of them
// in one line: an operator who sets ETCD_DISCOVERY or ETCD_CLIENT_CRL_FILE must not get a member
// that quietly does without it, nor find the second one only after fixing the first. A name one
// slip away from a setting's variable is a typing mistake, and its line says which variable was
// meant. ETCDCTL_* variables are etcdctl's, not ours.
func checkEnvironment(fs *pflag.FlagSet, environ []string) error {
	var names, why []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "ETCD_") || value == "" {
			// An empty variable counts as unset, as everywhere else in clusterd.
			continue
		}
		if !envName(name) {
			// Quoted: a name with a control character would otherwise break the one line.
			names, why = append(names, fmt.Sprintf("%q", name)), append(why, "names no clusterd setting")
			continue
		}
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, "ETCD_")), "_", "-")
		if fs.Lookup(flag) != nil && flag != "help" {
			continue
		}
		names = append(names, name)
		if meant := nearestSetting(fs, flag); meant != "" {
			why = append(why, fmt.Sprintf("clusterd has no --%s: did you mean %s?", flag, meant))
		} else {
			why = append(why, fmt.Sprintf("clusterd does not implement etcd's --%s", flag))
		}
	}
	switch len(names) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s is set, and %s: unset it (docs/clusterd.md lists the settings clusterd takes)", names[0], why[0])
	}
	each := make([]string, len(names))
	for i := range names {
		each[i] = names[i] + " (" + why[i] + ")"
	}
	return fmt.Errorf("%d variables are set that clusterd does not take: %s: unset them (docs/clusterd.md lists the settings clusterd takes)", len(names), strings.Join(each, ", "))
}

// nearestSetting is the variable of the setting whose flag is one edit from flag (a letter
// added, dropped, changed, or two exchanged); "" when none is. One, not two: etcd's own
// --peer-crl-file is two from --peer-cert-file, and a security setting must not be taken for a
// slip.
func nearestSetting(fs *pflag.FlagSet, flag string) string {
	best, bestD := "", 2
	fs.VisitAll(func(f *pflag.Flag) {
		if d := editDistance(flag, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "ETCD_" + strings.ToUpper(strings.ReplaceAll(best, "-", "_"))
}

// editDistance is the Levenshtein distance between a and b, counting an exchange of two
// neighbouring letters as one edit (the usual slip: FIEL for FILE).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// envName reports whether name is spelled as a setting's variable is: upper-case letters,
// digits and underscores.
func envName(name string) bool {
	return !strings.ContainsFunc(name, func(r rune) bool { return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') })
}

// readSources layers the ETCD_* environment and the config file under the parsed flags.
func readSources(fs *pflag.FlagSet) (*viper.Viper, error) {
	if err := checkEnvironment(fs, os.Environ()); err != nil {
		return nil, err
	}
	v := viper.New()
	if err := v.BindPFlags(fs); err != nil {
		return nil, err
	}
	v.SetEnvPrefix("ETCD")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if f := v.GetString("config-file"); f != "" {
		if err := readConfigFile(v, f); err != nil {
			return nil, err
		}
		for _, k := range v.AllKeys() {
			if fs.Lookup(k) == nil {
				return nil, fmt.Errorf("--config-file %q: %q is not a setting clusterd implements: remove it (docs/clusterd.md lists them)", f, k)
			}
		}
	}
	return v, nil
}

// readConfigFile reads the YAML file f into v. Read by hand, not by viper's ReadInConfig, whose
// errors do not say what is wrong: a file that does not exist was "Unsupported Config Type".
func readConfigFile(v *viper.Viper, f string) error {
	b, err := os.ReadFile(f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--config-file %q: the file does not exist", f)
	case err != nil:
		return fmt.Errorf("--config-file %q: %v", f, err)
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		// The YAML parser's error may run over several lines: one line is the contract.
		return fmt.Errorf("--config-file %q: not a YAML file of settings (key: value lines): %s", f, oneLine(err.Error()))
	}
	return nil
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// buildConfig reads every setting from v, refusing a value that does not convert, and builds
// the server's Config; the logger writes to stderr.
func buildConfig(fs *pflag.FlagSet, v *viper.Viper, stderr io.Writer) (server.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		return server.Config{}, fmt.Errorf("--log-level %q: must be debug, info, warn or error", v.GetString("log-level"))
	}
	nums, err := readAll(v, castUint,
		"heartbeat-interval", "election-timeout", "snapshot-count", "max-learners", "self-signed-cert-validity", "max-history")
	if err != nil {
		return server.Config{}, err
	}
	bools, err := readAll(v, castBool,
		append([]string{"strict-reconfig-check", "force-new-cluster", "force-new-cluster-bypass-live-check", "enable-pprof",
			"client-cert-auth", "auto-tls", "peer-client-cert-auth", "peer-auto-tls", servertls.ClientOnlyFlag[2:]}, discoveryBools...)...)
	if err != nil {
		return server.Config{}, err
	}
	format, err := logfmt.ParseFormat(v.GetString("log-format"))
	if err != nil {
		return server.Config{}, fmt.Errorf("--%v", err)
	}
	disc, err := discoveryConfig(v, bools)
	if err != nil {
		return server.Config{}, err
	}
	token := v.GetString("initial-cluster-token")
	if disc.Token != "" {
		// As etcd: the discovery token is the cluster token, so each token makes its own IDs.
		token = disc.Token
	}
	name := v.GetString("name")
	dataDir := v.GetString("data-dir")
	if dataDir == "" {
		dataDir = name + ".clusterd"
	}
	return server.Config{
		Name:                           name,
		DataDir:                        dataDir,
		ListenClientURLs:               membership.SplitURLs(v.GetString("listen-client-urls")),
		AdvertiseClientURLs:            membership.SplitURLs(v.GetString("advertise-client-urls")),
		ListenPeerURLs:                 membership.SplitURLs(v.GetString("listen-peer-urls")),
		InitialAdvertisePeerURLs:       membership.SplitURLs(v.GetString("initial-advertise-peer-urls")),
		InitialCluster:                 v.GetString("initial-cluster"),
		InitialClusterGiven:            fs.Changed("initial-cluster") || os.Getenv("ETCD_INITIAL_CLUSTER") != "" || v.InConfig("initial-cluster"),
		InitialClusterState:            v.GetString("initial-cluster-state"),
		InitialClusterToken:            token,
		Discovery:                      disc,
		HeartbeatInterval:              time.Duration(nums["heartbeat-interval"]) * time.Millisecond,
		ElectionTimeout:                time.Duration(nums["election-timeout"]) * time.Millisecond,
		SnapshotCount:                  max(nums["snapshot-count"], 1),
		StrictReconfigCheck:            bools["strict-reconfig-check"],
		ForceNewCluster:                bools["force-new-cluster"],
		ForceNewClusterBypassLiveCheck: bools["force-new-cluster-bypass-live-check"],
		MaxLearners:                    int(nums["max-learners"]),
		MaxHistory:                     int(min(max(nums["max-history"], 1), math.MaxInt32)),
		ListenMetricsURLs:              membership.SplitURLs(v.GetString("listen-metrics-urls")),
		EnablePprof:                    bools["enable-pprof"],
		TLS: servertls.Settings{
			Client: servertls.Side{
				CertFile: v.GetString("cert-file"), KeyFile: v.GetString("key-file"),
				TrustedCAFile: v.GetString("trusted-ca-file"), ClientCertAuth: bools["client-cert-auth"],
				AutoTLS: bools["auto-tls"],
			},
			Peer: servertls.Side{
				CertFile: v.GetString("peer-cert-file"), KeyFile: v.GetString("peer-key-file"),
				TrustedCAFile: v.GetString("peer-trusted-ca-file"), ClientCertAuth: bools["peer-client-cert-auth"],
				AutoTLS:          bools["peer-auto-tls"],
				AllowedCNs:       list(v.GetString("peer-cert-allowed-cn")),
				AllowedHostnames: list(v.GetString("peer-cert-allowed-hostname")),
				AllowClientOnly:  bools[servertls.ClientOnlyFlag[2:]],
			},
			SelfSignedCertValidity: uint(nums["self-signed-cert-validity"]),
			TLSMinVersion:          v.GetString("tls-min-version"),
			TLSMaxVersion:          v.GetString("tls-max-version"),
			CipherSuites:           list(v.GetString("cipher-suites")),
		},
		AdminAllowedCNs: list(v.GetString(authz.Flag[2:])),
		Logger:          logfmt.New(stderr, format, level),
	}, nil
}

// readAll converts each setting, by flag name, with cast; the first that does not convert is
// the error, quoting the value as given.
func readAll[T any](v *viper.Viper, cast func(value string) (T, error), keys ...string) (map[string]T, error) {
	out := make(map[string]T, len(keys))
	for _, k := range keys {
		x, err := cast(v.GetString(k))
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %v", k, v.GetString(k), err)
		}
		out[k] = x
	}
	return out, nil
}

// list splits a comma-separated setting, dropping empty items and spaces around them.
func list(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// castUint and castBool read a value that may come from a flag, an environment variable or a
// YAML file, refusing what viper's lenient casts would silently turn into zero, and units:
// --heartbeat-interval=100ms is not 100.
func castUint(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, errors.New("must be a whole number, without a unit")
	}
	return n, nil
}

func castBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, errors.New("must be true or false")
}
