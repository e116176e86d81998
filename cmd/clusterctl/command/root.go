package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/clienttls"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"google.golang.org/grpc/grpclog"
)

// globalFlags are the settings also read from CLUSTERCTL_<FLAG>, etcdctl's ETCDCTL_<FLAG> and
// the config file, in that order after the flag.
var globalFlags = []string{
	"endpoints", "dial-timeout", "command-timeout", "write-out",
	"cacert", "cert", "key", "insecure-skip-tls-verify", "insecure-transport", "user", "password",
	"password-file",
}

// Globals is what every command shares, resolved once before a verb runs.
type Globals struct {
	Out, Err io.Writer

	CommandTimeout time.Duration
	Printer        printer.Printer
	// Client builds the client from the global settings on its first call and returns the same
	// answer after. Only the verbs that talk to a cluster call it, so an offline verb (snapshot
	// status, snapshot restore) never fails on a client setting it does not use. The client
	// connects on its first request.
	Client func() (*client.Client, error)
	// given is the TLS and login settings as resolved, for a verb that passes the TLS files on
	// (discovery new -w env) or prints clusterctl lines (datadir status); the client has read
	// the files, and a password is never printed.
	given security
	// dialTimeout is --dial-timeout, for the clients of other contexts (cluster status
	// --all-contexts).
	dialTimeout time.Duration
	// askPassword reads a password without echo from the terminal, or fails when there is
	// none to ask; nil during completion, which must never wait for input.
	askPassword func() (string, error)
}

// Main runs clusterctl with the process's arguments and returns its exit code, which the
// process exits with at once.
func Main() int {
	silenceGRPC()
	// The connection is left open: the process ends right after, and the kernel closes the
	// socket. Closing it in grpc first costs a measurable share of a `member list`
	// (docs/benchmarks.md) and changes nothing for the member, which sees the connection end
	// either way.
	code, _ := execute(os.Args[1:], os.Stdout, os.Stderr)
	return code
}

// silenceGRPC discards grpc's own logging, which reports connection trouble on stderr: the one
// Error: line is all a user should see. grpc reads its logger without a lock, so this runs once,
// before any connection exists, and not in run, which tests call beside in-process servers.
func silenceGRPC() {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
}

// execute runs one command line and returns its exit code and the settings it ran with.
func execute(args []string, stdout, stderr io.Writer) (int, *Globals) {
	g := &Globals{Out: stdout, Err: stderr}
	g.askPassword = func() (string, error) { return askPassword(stderr) }
	root := newRootCmd(g)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return report(stderr, err), g
}

func newRootCmd(g *Globals) *cobra.Command {
	root := group(&cobra.Command{
		Use:   "clusterctl",
		Short: "Manage the members of a clusterd or etcd cluster",
		Long: `clusterctl adds, removes, updates, promotes and lists the members of a clusterd or etcd
cluster through etcd's v3 Cluster API, and saves, inspects and restores snapshots.

Every global flag can also be set as CLUSTERCTL_<FLAG> in the environment (CLUSTERCTL_ENDPOINTS,
CLUSTERCTL_CACERT, CLUSTERCTL_USER, ...), as etcdctl's ETCDCTL_<FLAG> (ETCDCTL_ENDPOINTS,
ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ...), so a shell set up for etcdctl works unchanged, or
in the file given by --config-file (or CLUSTERCTL_CONFIG_FILE), a YAML, JSON or TOML file with the
flags' names as keys, or in a named context of the contexts file ($CLUSTERCTL_CONFIG, else
$XDG_CONFIG_HOME/clusterctl/config.yaml, else ~/.config/clusterctl/config.yaml), chosen with
--context, CLUSTERCTL_CONTEXT or clusterctl config use-context. A flag wins over CLUSTERCTL_*,
which wins over ETCDCTL_*, which wins over the config file, which wins over the context.

Endpoints are host:port, http://host:port or https://host:port, as etcdctl takes them: https://
uses TLS, http:// never does, and a bare host:port does when any TLS flag is given or
--insecure-transport=false.`,
		Example: `  clusterctl --endpoints=10.0.0.1:2379,10.0.0.2:2379 member list -w table
  clusterctl --endpoints=https://10.0.0.1:2379 --cacert=ca.crt --cert=client.crt --key=client.key member list`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}, newMemberCmd(g), newSnapshotCmd(g), newDiscoveryCmd(g), newEndpointCmd(g), newMoveLeaderCmd(g),
		newVersionCmd(g), newClusterCmd(g), newConfigCmd(g), newDataDirCmd(g))
	root.SetOut(g.Out)
	root.SetErr(g.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	addGlobalFlags(root.PersistentFlags())
	registerCompletions(root)
	return root
}

// group makes cmd a command of subcommands: alone it prints its help, and an unknown
// subcommand is refused.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = noSubcommand
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.AddCommand(subs...)
	return cmd
}

// noSubcommand refuses an unknown subcommand, which cobra would otherwise answer with the help
// text and exit 0.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
	}
	return nil
}

// noArgs is the Args of a verb that takes no argument: cobra checks it before the verb runs.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{tooManyArgs(args)}
	}
	return nil
}

// addGlobalFlags defines the global flags in f: the root's, and a context's defaults.
func addGlobalFlags(f *pflag.FlagSet) {
	f.StringSlice("endpoints", []string{"127.0.0.1:2379"}, "client addresses of members, tried in order")
	f.Duration("dial-timeout", 2*time.Second, "how long to try connecting, over all endpoints")
	f.Duration("command-timeout", 5*time.Second, "how long a request may take once connected")
	f.StringP("write-out", "w", string(printer.Simple), "output format: simple, table, json, or env (member add)")
	f.String("config-file", "", "read unset global flags from this YAML, JSON or TOML file")
	f.String("cacert", "", "verify the members' TLS certificates with this CA bundle")
	f.String("cert", "", "identify clusterctl with this TLS client certificate")
	f.String("key", "", "the private key of --cert")
	f.Bool("insecure-skip-tls-verify", false, "use TLS without verifying the members' certificates (testing only)")
	f.Bool("insecure-transport", true, "reach a host:port endpoint without TLS unless a TLS flag is given")
	f.String("user", "", "authenticate as this user: name, or name:password (asked for on a terminal when not given)")
	f.String("password", "", "the password of --user (then --user is the whole name)")
	f.String("password-file", "", "read the password of --user from this file's first line (then --user is the whole name)")
	f.String(contextFlag, "", "take unset global flags from this context of the contexts file (clusterctl config)")
}

// resolve reads the global settings: flag, then CLUSTERCTL_<FLAG>, then ETCDCTL_<FLAG>, then the
// config file, then the context (contexts.go), each on its own; the login whole from the first
// of those places that gives any of it (login.go). It does no I/O besides reading the config file,
// when one is named, and the contexts file. Only the verbs and their completion call it, so help
// and the completion scripts never depend on the settings.
func (g *Globals) resolve(flags *pflag.FlagSet) error {
	v, err := loadSettings(flags)
	if err != nil {
		return err
	}
	c, err := applyContext(v, flags)
	if err != nil {
		return &usageError{err}
	}
	l, err := commandLogin(flags, v, c.Name, c.Settings)
	if err != nil {
		return &usageError{err}
	}
	if err := g.settle(v, l); err != nil {
		return &usageError{err}
	}
	return nil
}

// loadSettings binds every global setting to its flag, CLUSTERCTL_<FLAG>, ETCDCTL_<FLAG> and
// the config file, in that order, and reads the file when one is named.
func loadSettings(flags *pflag.FlagSet) (*viper.Viper, error) {
	v := viper.New()
	for _, name := range globalFlags {
		if err := v.BindPFlag(name, flags.Lookup(name)); err != nil {
			return nil, err
		}
		env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		// viper takes the first of these that is set; ETCDCTL_API and etcdctl's other
		// variables are not read and so are accepted silently.
		if err := v.BindEnv(name, "CLUSTERCTL_"+env, "ETCDCTL_"+env); err != nil {
			return nil, err
		}
	}
	if err := v.BindPFlag("config-file", flags.Lookup("config-file")); err != nil {
		return nil, err
	}
	if err := v.BindEnv("config-file", "CLUSTERCTL_CONFIG_FILE"); err != nil {
		return nil, err
	}
	if path := v.GetString("config-file"); path != "" {
		if err := checkConfigFile(path); err != nil {
			return nil, &usageError{err}
		}
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, &usageError{fmt.Errorf("config file %s: %w", path, err)}
		}
	}
	return v, nil
}

// configTypes are the config file types, by extension, in the order messages name them.
var configTypes = []string{"yaml", "yml", "json", "toml"}

// checkConfigFile says what is wrong with a config file before viper reads it: viper answers a
// missing file without an extension with `Unsupported Config Type ""`.
func checkConfigFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("config file %s does not exist", path)
	case err != nil:
		return fmt.Errorf("config file %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("config file %s is a directory", path)
	}
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if !slices.Contains(configTypes, ext) {
		return fmt.Errorf("config file %s: unknown type %q, from its extension; supported: .%s", path, ext, strings.Join(configTypes, ", ."))
	}
	return nil
}

// settle checks the global settings and makes Client. The durations and the format are checked
// here, for every verb, as the flags' syntax; the endpoints only when Client builds the client.
func (g *Globals) settle(v *viper.Viper, l login) error {
	var err error
	if g.dialTimeout, err = duration(v, "dial-timeout"); err != nil {
		return err
	}
	if g.CommandTimeout, err = duration(v, "command-timeout"); err != nil {
		return err
	}
	if g.Printer, err = printer.New(printer.Format(v.GetString("write-out"))); err != nil {
		return err
	}
	if g.given, err = securitySettings(v, l); err != nil {
		return err
	}
	g.Client = sync.OnceValues(func() (*client.Client, error) {
		c, err := newClient(v, g.dialTimeout, g.given, g.askPassword)
		if err != nil {
			// A bad endpoint is found before anything is sent.
			return nil, &usageError{err}
		}
		return c, nil
	})
	return nil
}

// newClient builds the client for the endpoints in v. The certificate files are read and the
// password asked for here, before anything is dialed, and only by verbs that talk to a cluster.
func newClient(v *viper.Viper, dialTimeout time.Duration, s security, ask func() (string, error)) (*client.Client, error) {
	// A list from a flag or a file arrives split; one from the environment is a single
	// comma-separated string, as in etcdctl's ETCDCTL_ENDPOINTS.
	var endpoints []string
	for _, e := range v.GetStringSlice("endpoints") {
		endpoints = append(endpoints, membership.SplitURLs(e)...)
	}
	cfg := client.Config{Endpoints: endpoints, DialTimeout: dialTimeout, BareTLS: !s.insecureTransport}
	var err error
	if s.tls != (clienttls.Options{}) {
		if cfg.TLS, err = s.tls.Config(); err != nil {
			return nil, err
		}
	}
	if cfg.Username, cfg.Password, err = s.credentials(ask); err != nil {
		return nil, err
	}
	return client.New(cfg)
}

// duration reads a duration strictly: a bare number from a file or the environment is refused
// rather than taken as nanoseconds.
func duration(v *viper.Viper, key string) (time.Duration, error) {
	d, err := time.ParseDuration(v.GetString(key))
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", key, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--%s must be positive, not %s", key, d)
	}
	return d, nil
}

// command is a verb's options: run sends.
type command interface {
	run(ctx context.Context) error
}

// validator is a verb with arguments or flags to check: validate checks them without any I/O.
type validator interface {
	validate(args []string) error
}

// runE is the RunE of every verb, which prints kind k: nothing is sent unless the settings
// accept the command line, then start.
func runE(g *Globals, k printer.Kind, c command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := g.resolve(cmd.Flags()); err != nil {
			return err
		}
		return g.start(cmd, args, k, c)
	}
}

// start runs c once its validate, if it has one, and the output format accept the command line:
// the format must print kind k, or its dry run with --dry-run.
func (g *Globals) start(cmd *cobra.Command, args []string, k printer.Kind, c command) error {
	if v, ok := c.(validator); ok {
		if err := v.validate(args); err != nil {
			return &usageError{err}
		}
	}
	dryRun, _ := cmd.Flags().GetBool("dry-run")
	if err := g.Printer.CheckFor(k, dryRun); err != nil {
		return &usageError{err}
	}
	return c.run(cmd.Context())
}

// withTimeout bounds one request, or one short sequence of them, by --command-timeout.
func (g *Globals) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.CommandTimeout)
}

// completeMember offers the names and IDs of the cluster's members for the one positional
// argument of remove, update and promote. Completion must never print an error into the
// user's command line, so failures just offer nothing.
func (g *Globals) completeMember(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || g.resolve(cmd.Flags()) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// Completion runs inside the shell's line editor: a missing password is no reason to ask.
	g.askPassword = func() (string, error) { return "", errors.New("no password to complete with") }
	c, err := g.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := g.withTimeout(cmd.Context())
	defer cancel()
	list, err := c.MemberList(ctx, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, m := range list.Members {
		id := client.FormatID(m.ID)
		if m.Name != "" && strings.HasPrefix(m.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(m.Name, id))
		}
		if strings.HasPrefix(id, toComplete) {
			out = append(out, cobra.CompletionWithDesc(id, m.Name))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
