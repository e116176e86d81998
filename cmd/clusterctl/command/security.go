package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	"golang.org/x/term"

	"github.com/clusterctl/clusterctl/pkg/clienttls"
)

// security is the TLS and auth settings, resolved from the flag, CLUSTERCTL_*, ETCDCTL_* or the
// config file, with etcdctl's meaning, and the login, taken whole from one place (login.go).
type security struct {
	tls               clienttls.Options
	insecureTransport bool
	// login's password file holds the password, read only when the client is built: a context
	// can name it without holding the password itself.
	login login
}

// securitySettings reads the settings; the booleans strictly, so that a misspelt
// ETCDCTL_INSECURE_SKIP_TLS_VERIFY is refused rather than read as false.
func securitySettings(v *viper.Viper, l login) (security, error) {
	s := security{
		tls: clienttls.Options{
			CACert: v.GetString("cacert"),
			Cert:   v.GetString("cert"),
			Key:    v.GetString("key"),
		},
		login: l,
	}
	var err error
	if s.tls.InsecureSkipVerify, err = boolSetting(v, "insecure-skip-tls-verify"); err != nil {
		return s, err
	}
	s.insecureTransport, err = boolSetting(v, "insecure-transport")
	return s, err
}

func boolSetting(v *viper.Viper, key string) (bool, error) {
	b, err := strconv.ParseBool(v.GetString(key))
	if err != nil {
		return false, fmt.Errorf("--%s: %q is not true or false", key, v.GetString(key))
	}
	return b, nil
}

// credentials splits the user as etcdctl splits --user: with a password (or a password file),
// the user is the whole name; without, "name:password" is split at the first colon, and a bare
// name has its password asked for. No user, no authentication. An error names the setting as
// it was given (--user, ETCDCTL_USER, user in context NAME, ...).
func (s security) credentials(ask func() (string, error)) (user, password string, err error) {
	l := s.login
	switch {
	case l.user == "":
		return "", "", nil
	case l.password != "":
		return l.user, l.password, nil
	case l.passwordFile != "":
		pw, err := readPasswordFile(l.place.names["password-file"], l.passwordFile)
		return l.user, pw, err
	}
	if name, pw, ok := strings.Cut(l.user, ":"); ok {
		return name, pw, nil
	}
	pw, err := ask()
	if err != nil {
		return "", "", fmt.Errorf("%s: no password given (%v): pass --password, --user %s:PASSWORD or ETCDCTL_PASSWORD, or run in a terminal to be asked", l.place.with("user", l.user), err, l.user)
	}
	return l.user, pw, nil
}

// askPassword prompts on stderr (stdout carries only the output) and reads a line from the
// terminal on stdin without echo. Without a terminal there is nobody to ask: a script hanging
// on a prompt is worse than a refusal.
func askPassword(prompt io.Writer) (string, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", errors.New("stdin is not a terminal")
	}
	fmt.Fprint(prompt, "Password: ")
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", err
	}
	return string(pw), nil
}

// readPasswordFile is the first line of path, without its line ending; from names the setting
// that gave path, for errors.
func readPasswordFile(from, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("%s %s: the first line is empty", from, path)
	}
	return line, nil
}
