package command

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// loginKeys are the settings a login is made of. A login is taken whole from one place: the
// first of loginPlaces that gives any of them, so that a user given on the command line never
// reads the password file of the context, and a password never meets a user from elsewhere.
var loginKeys = []string{"user", "password", "password-file"}

// login is the user and the source of its password, and where each came from.
type login struct {
	user, password, passwordFile string
	// place gives the settings; nil when no place does (no login).
	place *loginPlace
}

// loginPlace is one place a login can come from, and how messages name its settings.
type loginPlace struct {
	values map[string]string
	// names are how a message names each key given here: "--user", "ETCDCTL_PASSWORD",
	// "password-file in context prod".
	names map[string]string
	// userHint says where this place's user goes, for a password given without one.
	userHint string
}

// placeOf is the place whose settings lookup gives: each key's value, how messages name it,
// and whether it is given at all; userHint is where its user goes.
func placeOf(userHint string, lookup func(key string) (value, name string, given bool)) *loginPlace {
	p := &loginPlace{values: map[string]string{}, names: map[string]string{}, userHint: userHint}
	for _, k := range loginKeys {
		if v, n, ok := lookup(k); ok {
			p.values[k], p.names[k] = v, n
		}
	}
	return p
}

// with is how a message names key with its value: "--user root", "ETCDCTL_USER=root", "user root
// in context prod".
func (p *loginPlace) with(key, value string) string {
	n := p.names[key]
	switch {
	case strings.HasPrefix(n, "--"):
		return n + " " + value
	case !strings.Contains(n, " "):
		return n + "=" + value
	}
	k, rest, _ := strings.Cut(n, " ")
	return k + " " + value + " " + rest
}

// commandLinePlace is the login's flags as given; `--user=` with nothing counts as given, and
// so drops every other place's login for the command.
func commandLinePlace(flags *pflag.FlagSet) *loginPlace {
	return placeOf("--user", func(k string) (string, string, bool) {
		f := flags.Lookup(k)
		if f == nil || !f.Changed {
			return "", "", false
		}
		return f.Value.String(), "--" + k, true
	})
}

// environmentPlace is the login's variables, CLUSTERCTL_<KEY> before ETCDCTL_<KEY>; an empty
// variable counts as unset, as for every setting.
func environmentPlace(getenv func(string) string) *loginPlace {
	return placeOf("CLUSTERCTL_USER or ETCDCTL_USER", func(k string) (string, string, bool) {
		env := strings.ToUpper(strings.ReplaceAll(k, "-", "_"))
		for _, name := range []string{"CLUSTERCTL_" + env, "ETCDCTL_" + env} {
			if v := getenv(name); v != "" {
				return v, name, true
			}
		}
		return "", "", false
	})
}

// configFilePlace is the login the config file read into v gives, if one was read.
func configFilePlace(v *viper.Viper) *loginPlace {
	path := v.ConfigFileUsed()
	return placeOf("user in config file "+path, func(k string) (string, string, bool) {
		return fmt.Sprint(v.Get(k)), k + " in config file " + path, path != "" && v.InConfig(k)
	})
}

// contextPlace is the login of context name, whose settings are settings.
func contextPlace(name string, settings map[string]any) *loginPlace {
	return placeOf("user in context "+name, func(k string) (string, string, bool) {
		s, ok := settings[k].(string)
		return s, k + " in context " + name, ok && s != ""
	})
}

// loginOf is the login of the first place that gives any of its settings; none without one.
// A place that gives a password (or its file) without a user, or both a password and a file, is
// refused, naming the settings as it gives them.
func loginOf(places ...*loginPlace) (login, error) {
	for _, p := range places {
		if len(p.values) == 0 {
			continue
		}
		l := login{user: p.values["user"], password: p.values["password"], passwordFile: p.values["password-file"], place: p}
		switch {
		case l.password != "" && l.passwordFile != "":
			return l, fmt.Errorf("%s and %s: give one", p.names["password"], p.names["password-file"])
		case l.user != "":
			return l, nil
		case l.password != "":
			return l, fmt.Errorf("%s needs %s", p.names["password"], p.userHint)
		case l.passwordFile != "":
			return l, fmt.Errorf("%s needs %s", p.names["password-file"], p.userHint)
		}
		// --user= alone: no login, and no other place's.
		return login{}, nil
	}
	return login{}, nil
}

// commandLogin is the login of a command: its command line, else its environment, else the
// config file read into v, else the context applied (none gives no settings).
func commandLogin(flags *pflag.FlagSet, v *viper.Viper, ctxName string, ctxSettings map[string]any) (login, error) {
	return loginOf(commandLinePlace(flags), environmentPlace(os.Getenv), configFilePlace(v), contextPlace(ctxName, ctxSettings))
}
