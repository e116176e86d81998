package command

import (
	"context"
	"errors"
	"strings"

	"github.com/clusterctl/clusterctl/pkg/client"
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
	return group(&cobra.Command{
		Use:   "member",
		Short: "Add, remove, update, promote and list members",
		Example: `  clusterctl member list -w table
  clusterctl member add infra3 --peer-urls=http://10.0.0.4:2380 --learner`,
	}, newMemberAddCmd(g), newMemberRemoveCmd(g), newMemberUpdateCmd(g), newMemberPromoteCmd(g),
		newMemberListCmd(g), newMemberReplaceCmd(g), newMemberPruneCmd(g), newMemberHistoryCmd(g))
}

// oneArg checks the one positional argument of member add (its name) or of a change (the
// member's ID or name): none, or an empty one, is none.
func oneArg(args []string, none error) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", none
	}
	if len(args) > 1 {
		return "", tooManyArgs(args[1:])
	}
	return args[0], nil
}

// onMember is how every command acting on one member starts: it dials, then within one
// --command-timeout resolves ref (an ID or a name) and calls f with the member's ID and the
// linearizable member list it was resolved in (nil when none was read). The list is read when
// ref is a name or the command needs it (withList); a full ID alone costs no request.
func (g *Globals) onMember(ctx context.Context, ref string, withList bool, f func(ctx context.Context, c *client.Client, members []client.Member, id uint64) error) error {
	c, err := g.Client()
	if err != nil {
		return err
	}
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	if !withList {
		id, err := c.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		return f(ctx, c, nil, id)
	}
	list, err := c.ListForResolve(ctx)
	if err != nil {
		return err
	}
	id, err := client.ResolveIn(list.Members, ref)
	if err != nil {
		return err
	}
	return f(ctx, c, list.Members, id)
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
