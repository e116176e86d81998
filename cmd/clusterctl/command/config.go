package command

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/contexts"
	"github.com/clusterctl/clusterctl/pkg/printer"
)

func newConfigCmd(g *Globals) *cobra.Command {
	return group(&cobra.Command{
		Use:   "config",
		Short: "Manage named contexts: the settings of each cluster, in the contexts file",
		Long: `Manage the contexts file ($CLUSTERCTL_CONFIG, else $XDG_CONFIG_HOME/clusterctl/config.yaml,
else ~/.config/clusterctl/config.yaml): named contexts, each holding what the global flags hold
(endpoints, --cacert, --cert, --key, --user, --password, timeouts, --insecure-*), and the
current context. Every command takes its unset global flags from the context named by --context
or CLUSTERCTL_CONTEXT, else from the current one. The file is written atomically with mode 0600,
keeping every key and comment it does not know; one that holds a password and is readable by
others is refused.`,
		Example: `  clusterctl config set-context prod --endpoints=https://10.0.0.1:2379 --cacert=ca.crt --cert=c.crt --key=c.key
  clusterctl config use-context prod
  clusterctl --context staging member list`,
	}, newSetContextCmd(g), newUseContextCmd(g), newGetContextsCmd(g),
		newCurrentContextCmd(g), newDeleteContextCmd(g), newViewConfigCmd(g))
}

// configOptions are what the config verbs share: the file, read at run.
type configOptions struct {
	*Globals
	Name string
}

// oneName takes the context's name, the one argument.
func (o *configOptions) oneName(args []string) error {
	switch {
	case len(args) == 0:
		return errors.New("a context name is required")
	case len(args) > 1:
		return tooManyArgs(args[1:])
	case args[0] == "":
		return errors.New("the context name must not be empty")
	}
	o.Name = args[0]
	return nil
}

// load reads the contexts file; an unknown context named is a usage error, as --context's.
func (o *configOptions) load() (*contexts.File, error) {
	f, err := loadContexts()
	if err != nil {
		return nil, &usageError{err}
	}
	return f, nil
}

// edit changes the contexts file under its writers' lock: it reads the file as it is once the
// lock is held, applies change and saves it before letting go, so that a writer at the same
// moment (another terminal, a provisioning script) loses nothing.
func (o *configOptions) edit(change func(*contexts.File) error) (*contexts.File, error) {
	path, err := contexts.Path(os.Getenv)
	if err != nil {
		return nil, &usageError{err}
	}
	unlock, err := contexts.Lock(path)
	if err != nil {
		return nil, &client.LocalWriteError{Path: path, Err: err}
	}
	defer unlock()
	f, err := o.load()
	if err != nil {
		return nil, err
	}
	if err := change(f); err != nil {
		return nil, err
	}
	if err := f.Save(); err != nil {
		return nil, &client.LocalWriteError{Path: f.Path, Err: err}
	}
	return f, nil
}

// configRunE is runE for the config verbs: of the settings they read -w alone, never a
// context's, so a broken current context can still be mended; the other global flags are
// set-context's values, checked as a context's.
func configRunE(g *Globals, k printer.Kind, c command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		v, err := loadSettings(cmd.Flags())
		if err != nil {
			return err
		}
		if g.Printer, err = printer.New(printer.Format(v.GetString("write-out"))); err != nil {
			return &usageError{err}
		}
		return g.start(cmd, args, k, c)
	}
}

type setContextOptions struct {
	configOptions
	flags *pflag.FlagSet
}

func newSetContextCmd(g *Globals) *cobra.Command {
	o := &setContextOptions{configOptions: configOptions{Globals: g}}
	cmd := &cobra.Command{
		Use:   "set-context NAME [global flags]",
		Short: "Create a context, or change the settings of one",
		Long: `Create the context NAME from the global flags given, or change the settings of an existing one:
only the flags given change; the others stay as they were. The settings are checked as the global
flags are; nothing is dialed and no file named is read.`,
		Example: `  clusterctl config set-context prod --endpoints=https://10.0.0.1:2379,https://10.0.0.2:2379 --cacert=/etc/prod/ca.crt --cert=/etc/prod/c.crt --key=/etc/prod/c.key
  clusterctl config set-context prod --command-timeout=10s`,
		RunE:              configRunE(g, printer.ConfigText, o),
		ValidArgsFunction: completeContextNames,
	}
	o.flags = cmd.Flags()
	return cmd
}

func (o *setContextOptions) validate(args []string) error {
	if err := o.oneName(args); err != nil {
		return err
	}
	if o.flags.Changed(contextFlag) {
		return errors.New("set-context takes the context's name as its argument, not --context")
	}
	return nil
}

// given are the settings the command line gives, by the flags' names.
func (o *setContextOptions) given() map[string]any {
	out := map[string]any{}
	for _, k := range contexts.Keys {
		switch f := o.flags.Lookup(k); {
		case f == nil || !f.Changed:
		case k == "endpoints":
			out[k], _ = o.flags.GetStringSlice(k)
		default:
			out[k] = f.Value.String()
		}
	}
	return out
}

func (o *setContextOptions) run(context.Context) error {
	var created bool
	f, err := o.edit(func(f *contexts.File) error {
		var err error
		if created, err = f.Set(o.Name, o.given()); err != nil {
			return err
		}
		c, err := f.Get(o.Name)
		if err != nil {
			return err
		}
		if err := checkContext(c); err != nil {
			return &usageError{fmt.Errorf("context %q: %w", o.Name, err)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	verb := "modified"
	if created {
		verb = "created"
	}
	return o.Printer.ConfigText(o.Out, fmt.Sprintf("Context %q %s in %s\n", o.Name, verb, f.Path))
}

// checkContext checks a context's settings as the global flags are checked, without any I/O:
// the durations, the booleans, --password's --user, and the endpoints' form.
func checkContext(c contexts.Context) error {
	_, dial, _, _, err := contextSettings(c, nil)
	if err != nil {
		return err
	}
	if eps := c.Endpoints(); len(eps) > 0 {
		// Only the endpoints' form: TLS and the mixing of kinds are the client's to judge.
		_, err = client.New(client.Config{Endpoints: eps, DialTimeout: dial, BareTLS: c.TLS()})
	}
	return err
}

// editContextOptions are use-context's and delete-context's: one change to the context NAME,
// which must be in the file, saved, and one line saying what was done.
type editContextOptions struct {
	configOptions
	change func(f *contexts.File, name string) error
	done   func(name, path string) string
}

func newUseContextCmd(g *Globals) *cobra.Command {
	return newEditContextCmd(g, &cobra.Command{
		Use:     "use-context NAME",
		Short:   "Make NAME the current context",
		Example: `  clusterctl config use-context prod`,
	}, (*contexts.File).Use, func(name, _ string) string { return fmt.Sprintf("Switched to context %q\n", name) })
}

func newDeleteContextCmd(g *Globals) *cobra.Command {
	return newEditContextCmd(g, &cobra.Command{
		Use:     "delete-context NAME",
		Short:   "Delete the context NAME (and the current context, when it was NAME)",
		Example: `  clusterctl config delete-context lab`,
	}, (*contexts.File).Delete, func(name, path string) string { return fmt.Sprintf("Deleted context %q from %s\n", name, path) })
}

func newEditContextCmd(g *Globals, cmd *cobra.Command, change func(*contexts.File, string) error, done func(name, path string) string) *cobra.Command {
	o := &editContextOptions{configOptions: configOptions{Globals: g}, change: change, done: done}
	cmd.RunE = configRunE(g, printer.ConfigText, o)
	cmd.ValidArgsFunction = completeContextNames
	return cmd
}

func (o *editContextOptions) validate(args []string) error { return o.oneName(args) }

func (o *editContextOptions) run(context.Context) error {
	f, err := o.edit(func(f *contexts.File) error {
		if _, err := f.Get(o.Name); is[*contexts.UnknownContextError](err) {
			// An unknown context named is a usage error, as --context's.
			return &usageError{err}
		} else if err != nil {
			return err
		}
		return o.change(f, o.Name)
	})
	if err != nil {
		return err
	}
	return o.Printer.ConfigText(o.Out, o.done(o.Name, f.Path))
}

// showOptions are the config verbs that take no argument and print from the file as it is:
// current-context, get-contexts and view.
type showOptions struct {
	configOptions
	show func(o *showOptions, f *contexts.File) error
}

func newShowCmd(g *Globals, cmd *cobra.Command, kind printer.Kind, show func(*showOptions, *contexts.File) error) *cobra.Command {
	o := &showOptions{configOptions: configOptions{Globals: g}, show: show}
	cmd.Args = noArgs
	cmd.RunE = configRunE(g, kind, o)
	return cmd
}

func (o *showOptions) run(context.Context) error {
	f, err := o.load()
	if err != nil {
		return err
	}
	return o.show(o, f)
}

func newCurrentContextCmd(g *Globals) *cobra.Command {
	return newShowCmd(g, &cobra.Command{
		Use:   "current-context",
		Short: "Print the current context's name",
		Long: `Print the name of the context commands use when neither --context nor CLUSTERCTL_CONTEXT names
one. Exit 10 when none is set.`,
		Example: `  clusterctl config current-context`,
	}, printer.ConfigText, func(o *showOptions, f *contexts.File) error {
		if f.Current() == "" {
			return &noCurrentContextError{f.Path}
		}
		return o.Printer.ConfigText(o.Out, f.Current()+"\n")
	})
}

// noCurrentContextError is current-context with none set.
type noCurrentContextError struct{ path string }

func (e *noCurrentContextError) Error() string {
	return fmt.Sprintf("no current context is set in %s: clusterctl config use-context NAME", e.path)
}

func newGetContextsCmd(g *Globals) *cobra.Command {
	return newShowCmd(g, &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts: current mark, name, endpoints, TLS and user",
		Long: `List the contexts in the file's order: a * for the current one, the name, the endpoints, whether
the cluster is reached over TLS (yes or no) and the user (without its password).`,
		Example: `  clusterctl config get-contexts -w table
  clusterctl config get-contexts -w json | jq -r '.[].name'`,
	}, printer.ConfigContexts, func(o *showOptions, f *contexts.File) error {
		cs, err := f.Contexts()
		if err != nil {
			return err
		}
		rows := make([]printer.ContextRow, len(cs))
		for i, c := range cs {
			rows[i] = printer.ContextRow{Name: c.Name, Current: c.Name == f.Current(), Endpoints: c.Endpoints(), TLS: c.TLS(), User: c.User()}
		}
		return o.Printer.Contexts(o.Out, rows)
	})
}

func newViewConfigCmd(g *Globals) *cobra.Command {
	return newShowCmd(g, &cobra.Command{
		Use:   "view",
		Short: "Print the contexts file, passwords masked",
		Long: `Print the contexts file as YAML, every key kept, with each password (a context's password, or
what follows the colon of a user given as name:password) replaced by REDACTED.`,
		Example: `  clusterctl config view`,
	}, printer.ConfigText, func(o *showOptions, f *contexts.File) error {
		b, err := f.Masked()
		if err != nil {
			return err
		}
		return o.Printer.ConfigText(o.Out, string(b))
	})
}

// completeContextNames offers the contexts' names for a command's one NAME argument.
func completeContextNames(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return contextNames(toComplete), cobra.ShellCompDirectiveNoFileComp
}

// contextNames are the contexts' names that start with prefix; none when the file cannot be
// read, since completion never prints an error.
func contextNames(prefix string) []cobra.Completion {
	f, err := loadContexts()
	if err != nil {
		return nil
	}
	return prefixed(f.Names(), prefix)
}
