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
// config file, with etcdctl's meaning.
type security struct {
	tls               clienttls.Options
	insecureTransport bool
	user, password    string
	// passwordFile holds the password, read only when the client is built: a context can name
	// it without holding the password itself.
	passwordFile string
}

// securitySettings reads the settings; the booleans strictly, so that a misspelt
// ETCDCTL_INSECURE_SKIP_TLS_VERIFY is refused rather than read as false.
func securitySettings(v *viper.Viper) (security, error) {
	s := security{
		tls: clienttls.Options{
			CACert: v.GetString("cacert"),
			Cert:   v.GetString("cert"),
			Key:    v.GetString("key"),
		},
		user:         v.GetString("user"),
		password:     v.GetString("password"),
		passwordFile: v.GetString("password-file"),
	}
	var err error
	if s.tls.InsecureSkipVerify, err = boolSetting(v, "insecure-skip-tls-verify"); err != nil {
		return s, err
	}
	if s.insecureTransport, err = boolSetting(v, "insecure-transport"); err != nil {
		return s, err
	}
	switch {
	case s.password != "" && s.user == "":
		return s, errors.New("--password needs --user")
	case s.passwordFile != "" && s.user == "":
		return s, errors.New("--password-file needs --user")
	case s.password != "" && s.passwordFile != "":
		return s, errors.New("--password and --password-file: give one")
	}
	return s, nil
}

func boolSetting(v *viper.Viper, key string) (bool, error) {
	b, err := strconv.ParseBool(v.GetString(key))
	if err != nil {
		return false, fmt.Errorf("--%s: %q is not true or false", key, v.GetString(key))
	}
	return b, nil
}

// credentials splits --user as etcdctl does: with --password (or --password-file), --user is
// the whole name; without, "name:password" is split at the first colon, and a bare name has its
// password asked for. No user, no authentication.
func (s security) credentials(ask func() (string, error)) (user, password string, err error) {
	switch {
	case s.user == "":
		return "", "", nil
	case s.password != "":
		return s.user, s.password, nil
	case s.passwordFile != "":
		pw, err := readPasswordFile(s.passwordFile)
		return s.user, pw, err
	}
	if name, pw, ok := strings.Cut(s.user, ":"); ok {
		return name, pw, nil
	}
	pw, err := ask()
	if err != nil {
		return "", "", fmt.Errorf("--user %s: no password given (%v): pass --password, --user %s:PASSWORD or ETCDCTL_PASSWORD, or run in a terminal to be asked", s.user, err, s.user)
	}
	return s.user, pw, nil
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

// readPasswordFile is the first line of path, without its line ending.
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("--password-file %s: the first line is empty", path)
	}
	return line, nil
}
