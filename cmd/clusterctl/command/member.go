package command

import (
	"errors"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/membership"
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
		newMemberReplaceCmd(g),
		newMemberPruneCmd(g),
		newMemberHistoryCmd(g),
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

// peerURLs splits and checks --peer-urls with the validator clusterd uses, so a URL the server
// would refuse is refused, in etcd's words, before anything is sent.
func peerURLs(flag string) ([]string, error) {
	urls := membership.SplitURLs(flag)
	if len(urls) == 0 {
		return nil, errNoPeerURLs
	}
	for _, u := range urls {
		if err := membership.ValidateURL(u); err != nil {
			return nil, err
		}
	}
	return urls, nil
}
