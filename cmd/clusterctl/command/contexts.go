package command

import (
	"cmp"
	"errors"
	"os"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/clusterctl/clusterctl/pkg/client"
	"github.com/clusterctl/clusterctl/pkg/contexts"
)

// contextFlag is the global flag naming the context; CLUSTERCTL_CONTEXT is its variable.
const contextFlag = "context"

// chosenContext is the context a command line names with --context or CLUSTERCTL_CONTEXT, ""
// when it names none.
func chosenContext(flags *pflag.FlagSet) string {
	if f := flags.Lookup(contextFlag); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv("CLUSTERCTL_CONTEXT")
}

// loadContexts reads the contexts file; a missing file is an empty one.
func loadContexts() (*contexts.File, error) {
	path, err := contexts.Path(os.Getenv)
	if err != nil {
		return nil, err
	}
	return contexts.Load(path)
}

// applyContext puts the settings of the context named by --context, CLUSTERCTL_CONTEXT or the
// file's current context under everything else viper reads: as its defaults, which come after
// flags, CLUSTERCTL_*, ETCDCTL_* and the config file, and before the flags' own defaults. It
// returns that context, the zero one when none applies.
func applyContext(v *viper.Viper, flags *pflag.FlagSet) (contexts.Context, error) {
	name := chosenContext(flags)
	f, err := loadContexts()
	if err != nil {
		if name == "" && errors.Is(err, contexts.ErrNoPath) {
			// Without HOME nor a path there is no file, and no context was asked for.
			return contexts.Context{}, nil
		}
		return contexts.Context{}, err
	}
	if name = cmp.Or(name, f.Current()); name == "" {
		return contexts.Context{}, nil
	}
	c, err := f.Get(name)
	if err != nil {
		return contexts.Context{}, err
	}
	for k, val := range c.Settings {
		v.SetDefault(k, val)
	}
	return c, nil
}

// contextSettings reads context c's settings over defaults, then over the global flags' own
// defaults, and checks them as the global flags are: the durations, the login, the booleans.
func contextSettings(c contexts.Context, defaults map[string]string) (v *viper.Viper, dial, timeout time.Duration, s security, err error) {
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	addGlobalFlags(fs)
	v = viper.New()
	if err = v.BindPFlags(fs); err != nil {
		return
	}
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	for k, val := range c.Settings {
		v.SetDefault(k, val)
	}
	if dial, err = duration(v, "dial-timeout"); err != nil {
		return
	}
	if timeout, err = duration(v, "command-timeout"); err != nil {
		return
	}
	l, err := loginOf(contextPlace(c.Name, c.Settings))
	if err != nil {
		return
	}
	s, err = securitySettings(v, l)
	return
}

// contextClient builds the client of context c alone, for cluster status --all-contexts: the
// context's settings over the flags' defaults, its timeouts else the command's. Nothing is
// asked on a terminal: many clusters are asked at once.
func (g *Globals) contextClient(c contexts.Context) (*client.Client, time.Duration, error) {
	v, dial, timeout, s, err := contextSettings(c, map[string]string{
		"dial-timeout": g.dialTimeout.String(), "command-timeout": g.CommandTimeout.String()})
	if err != nil {
		return nil, 0, err
	}
	cl, err := newClient(v, dial, s, func() (string, error) {
		return "", errors.New("never asked with several contexts")
	})
	return cl, timeout, err
}
