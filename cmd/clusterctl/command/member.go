package command

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// The contract's wording for argument errors (docs/commands/member-*.md): scripts match it.
var (
	errNoName     = errors.New("member name not provided")
	errNoPeerURLs = errors.New("member peer urls not provided")
	errNoID       = errors.New("member ID is not provided")
)

func newMemberCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "member",
		Short: "Add, remove, update, promote and list members",
		Example: `  clusterctl member list -w table
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newMemberAddCmd(g),
		newMemberRemoveCmd(g),
		newMemberUpdateCmd(g),
		newMemberPromoteCmd(g),
		newMemberListCmd(g),
	)
	return cmd
}

// memberRef checks the one positional argument that names a member by ID or name.
func memberRef(args []string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", errNoID
	}
	if len(args) > 1 {
		return "", tooManyArgs(args[1:])
	}
	return args[0], nil
}

// tooManyArgs suggests --peer-urls for every extra argument that looks like a URL: the usual
// slip is a space where --peer-urls= belonged.
func tooManyArgs(extra []string) error {
	msg := "too many arguments"
	for _, a := range extra {
		if strings.Contains(a, "://") {
			msg += ", did you mean --peer-urls=" + a
		}
	}
	return errors.New(msg)
}

// peerURLs splits and checks --peer-urls by etcd's rules, so a URL the server would refuse is
// refused before anything is sent.
func peerURLs(flag string) ([]string, error) {
	if flag == "" {
		return nil, errNoPeerURLs
	}
	urls := strings.Split(flag, ",")
	for i, in := range urls {
		in = strings.TrimSpace(in)
		u, err := url.Parse(in)
		if err != nil {
			return nil, err
		}
		switch u.Scheme {
		case "http", "https":
			if _, _, err := net.SplitHostPort(u.Host); err != nil {
				return nil, fmt.Errorf(`URL address does not have the form "host:port": %s`, in)
			}
			if u.Path != "" {
				return nil, fmt.Errorf("URL must not contain a path: %s", in)
			}
		case "unix", "unixs":
		default:
			return nil, fmt.Errorf("URL scheme must be http, https, unix, or unixs: %s", in)
		}
		urls[i] = in
	}
	return urls, nil
}
