package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/membership"
	"github.com/clusterctl/clusterctl/pkg/printer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"google.golang.org/grpc/grpclog"
)

// globalFlags are the settings also read from CLUSTERCTL_<FLAG> and the config file.
var globalFlags = []string{"endpoints", "dial-timeout", "command-timeout", "write-out"}

// Globals is what every command shares, resolved once before a verb runs.
type Globals struct {
	Out, Err io.Writer

	CommandTimeout time.Duration
	Printer        printer.Printer
	// Client builds the client from the global settings on its first call and returns the same
	// one after. Only the verbs that talk to a cluster call it, so an offline verb (snapshot
	// status, snapshot restore) never fails on a client setting it does not use. The client
	// connects on its first request.
	Client func() (*client.Client, error)
	// built is the client Client built, if any: run closes it.
	built *client.Client
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

// run is Main for a caller that goes on living, a test: it also closes the connection.
func run(args []string, stdout, stderr io.Writer) int {
	code, g := execute(args, stdout, stderr)
	if g.built != nil {
		// Closing a connection cannot change what the command did.
		_ = g.built.Close()
	}
	return code
}

// execute runs one command line and returns its exit code and the settings it ran with.
func execute(args []string, stdout, stderr io.Writer) (int, *Globals) {
	g := &Globals{Out: stdout, Err: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return report(stderr, err), g
}

func newRootCmd(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "clusterctl",
		Short: "Manage the members of a clusterd or etcd cluster",
		Long: `clusterctl adds, removes, updates, promotes and lists the members of a clusterd or etcd
cluster through etcd's v3 Cluster API, and saves, inspects and restores snapshots.

Every global flag can also be set as CLUSTERCTL_<FLAG> in the environment (CLUSTERCTL_ENDPOINTS,
CLUSTERCTL_DIAL_TIMEOUT, CLUSTERCTL_COMMAND_TIMEOUT, CLUSTERCTL_WRITE_OUT) or in the file given by
--config-file (or CLUSTERCTL_CONFIG_FILE), a YAML, JSON or TOML file with the flags' names as keys.
A flag wins over the environment, which wins over the file.`,
		Example:       `  clusterctl --endpoints=10.0.0.1:2379,10.0.0.2:2379 member list -w table`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noSubcommand,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(g.Out)
	root.SetErr(g.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	f := root.PersistentFlags()
	f.StringSlice("endpoints", []string{"127.0.0.1:2379"}, "client addresses of members, tried in order")
	f.Duration("dial-timeout", 2*time.Second, "how long to try connecting, over all endpoints")
	f.Duration("command-timeout", 5*time.Second, "how long a request may take once connected")
	f.StringP("write-out", "w", string(printer.Simple), "output format: simple, table, json, or env (member add)")
	f.String("config-file", "", "read unset global flags from this YAML, JSON or TOML file")
	root.AddCommand(newMemberCmd(g), newSnapshotCmd(g))
	root.AddCommand(newDiscoveryCmd(g))
	return root
}

// noSubcommand refuses an unknown subcommand, which cobra would otherwise answer with the help
// text and exit 0.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
	}
	return nil
}

// resolve reads the global settings: flag, then CLUSTERCTL_<FLAG>, then the config file. It does
// no I/O besides reading the config file, and that only when one is named. Only the verbs and
// their completion call it, so help and the completion scripts never depend on the settings.
func (g *Globals) resolve(flags *pflag.FlagSet) error {
	v := viper.New()
	v.SetEnvPrefix("CLUSTERCTL")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	for _, name := range append(globalFlags, "config-file") {
		if err := v.BindPFlag(name, flags.Lookup(name)); err != nil {
			return err
		}
		if err := v.BindEnv(name); err != nil {
			return err
		}
	}
	if path := v.GetString("config-file"); path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return &usageError{fmt.Errorf("config file %s: %w", path, err)}
		}
	}
	err := g.settle(v)
	if err != nil {
		return &usageError{err}
	}
	return nil
}

// settle checks the global settings and makes Client. The durations and the format are checked
// here, for every verb, as the flags' syntax; the endpoints only when Client builds the client.
func (g *Globals) settle(v *viper.Viper) error {
	dialTimeout, err := duration(v, "dial-timeout")
	if err != nil {
		return err
	}
	if g.CommandTimeout, err = duration(v, "command-timeout"); err != nil {
		return err
	}
	if g.Printer, err = printer.New(printer.Format(v.GetString("write-out"))); err != nil {
		return err
	}
	g.Client = func() (*client.Client, error) {
		if g.built != nil {
			return g.built, nil
		}
		c, err := newClient(v, dialTimeout)
		if err != nil {
			// A bad endpoint is found before anything is sent.
			return nil, &usageError{err}
		}
		g.built = c
		return c, nil
	}
	return nil
}

// newClient builds the client for the endpoints in v.
func newClient(v *viper.Viper, dialTimeout time.Duration) (*client.Client, error) {
	// A list from a flag or a file arrives split; one from the environment is a single
	// comma-separated string, as in etcdctl's ETCDCTL_ENDPOINTS.
	var endpoints []string
	for _, e := range v.GetStringSlice("endpoints") {
		endpoints = append(endpoints, membership.SplitURLs(e)...)
	}
	return client.New(client.Config{Endpoints: endpoints, DialTimeout: dialTimeout})
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

// command is a verb's options: validate checks the arguments and flags without any I/O, run
// sends.
type command interface {
	validate(args []string) error
	run(ctx context.Context) error
}

// runE is the RunE of every verb: nothing is sent unless the settings and validate accept the
// command line.
func runE(g *Globals, c command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := g.resolve(cmd.Flags()); err != nil {
			return err
		}
		if err := c.validate(args); err != nil {
			return &usageError{err}
		}
		return c.run(cmd.Context())
	}
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
